/**
 * The worker process's one entry function: `durable-fetch worker` and `npm start` both run the
 * worker through it, so the two can never assemble it differently. It registers the jobs of
 * jobs/index.ts (a mistake in the list stops it with one line), says which sources no job of this
 * worker runs, stamps the worker's build (worker/build-version.ts) on its workflow tasks, polls
 * the downstreams' own task queues (worker/downstream-pollers.ts, R8), and runs the periodic
 * stuck-run sweep (and, optionally, the cleanup) beside it.
 */
import type { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { startPeriodicCleanup } from '../activities/cleanup.ts';
import { localFetchStopped } from '../activities/pages/local-stop.ts';
import { enabledSourcesOfOtherJobs } from '../db/sources.ts';
import type { JobRegistry } from '../activities/job-api/registry.ts';
import { createActivityDeps } from '../activities/create-deps.ts';
import type { Config } from '../runtime/config.ts';
import type { PrismaClient } from '../db/client.ts';
import { defaultJobs } from '../jobs/registry.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Metrics } from '../runtime/metrics/metrics.ts';
import type { Periodic } from '../runtime/periodic.ts';
import { startStuckRunSweep } from './sweeps/sweep-loop.ts';
import { resolveWorkerBuild, type WorkerBuild } from './build-version.ts';
import { type DownstreamPollers, startDownstreamPollers } from './downstream-pollers.ts';
import { connectNative } from '../runtime/temporal.ts';
import { buildWorker } from './worker.ts';

export interface WorkerProcessOptions {
  config: Config;
  prisma: PrismaClient;
  temporal: () => Promise<Client>;
  log: Logger;
  metrics: Metrics;
  /** Also delete expired rows periodically (off where another loop of the process does it). */
  cleanup: boolean;
  /** Where the one-line notices go (the console of the person who started it). */
  say: (line: string) => void;
  /** The jobs to run; default those of jobs/index.ts. */
  jobs?: JobRegistry;
}

export interface WorkerProcess {
  worker: Worker;
  /** The pollers of the downstreams' task queues. */
  downstreams: DownstreamPollers;
  jobs: JobRegistry;
  /** The build it stamps on the workflow tasks it completes (docs/versioning.md). */
  build: WorkerBuild;
  /**
   * Stops the worker and the downstream pollers gracefully, together (each lets its running
   * activities finish within the grace time). Idempotent; `run()` then resolves.
   */
  shutdown(): void;
  /** Runs until the workers stop (after `shutdown()`), then closes what it opened. */
  run(): Promise<void>;
}

/**
 * Builds the worker and what runs beside it.
 * @throws UserFacingError `JOB_REGISTRY` for a bad job list; Temporal connection errors.
 */
export async function startWorkerProcess(options: WorkerProcessOptions): Promise<WorkerProcess> {
  const { config, prisma, log } = options;
  const jobs = options.jobs ?? defaultJobs();
  await reportUnknownJobs(prisma, jobs, options.say);
  const connection = await connectNative(config);
  // Aborted when the shutdown's grace time is over, for the partner calls running as local
  // activities (page fetches, confirms), which the SDK does not cancel then
  // (activities/pages/local-stop.ts).
  const stopping = new AbortController();
  const deps = {
    ...createActivityDeps(config, prisma, log, options.metrics, jobs),
    stopping: stopping.signal,
  };
  const build = await resolveWorkerBuild(config.projectRoot, config.worker.buildId);
  const worker = await buildWorker({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    deps,
    shutdownGraceTimeMs: config.worker.shutdownGraceMs,
    maxConcurrentActivityTaskExecutions: config.worker.activitySlots,
    maxCachedWorkflows: config.worker.cachedWorkflows,
    build: { deploymentName: build.deploymentName, buildId: build.buildId },
    ...(config.worker.workflowBundlePath
      ? { workflowBundle: { codePath: config.worker.workflowBundlePath } }
      : {}),
  });
  let failed: Error | undefined;
  let stopRequested = false;
  // Set once they run: a poller may fail (and ask for a shutdown) while the others still start.
  const started: { pollers?: DownstreamPollers } = {};
  let graceOver: NodeJS.Timeout | undefined;
  const shutdown = () => {
    stopRequested = true;
    graceOver ??= setTimeout(() => {
      log.info('shutdown grace time over: local partner calls still running stop, to be retried elsewhere');
      stopping.abort(localFetchStopped());
    }, config.worker.shutdownGraceMs).unref();
    if (worker.getState() === 'RUNNING') worker.shutdown();
    void started.pollers?.shutdown();
  };
  const pollers = await startDownstreamPollers({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    deps,
    temporal: options.temporal,
    log,
    refreshMs: config.worker.downstreamRefreshMs,
    shutdownGraceTimeMs: config.worker.shutdownGraceMs,
    build: { deploymentName: build.deploymentName, buildId: build.buildId },
    // A downstream's queue no worker of this process serves: stop it whole, as a worker error does.
    onFailure: (err) => {
      failed ??= err instanceof Error ? err : new Error(String(err));
      shutdown();
    },
  });
  started.pollers = pollers;
  const loops: Periodic[] = [
    startStuckRunSweep({
      prisma,
      temporal: options.temporal,
      taskQueue: config.temporal.taskQueue,
      log,
      metrics: options.metrics,
      intervalMs: config.runs.sweepIntervalMs,
    }),
  ];
  if (options.cleanup)
    loops.push(startPeriodicCleanup(prisma, { intervalMs: config.runs.cleanupIntervalMs, log }));
  log.info(
    {
      taskQueue: config.temporal.taskQueue,
      jobs: jobs.types,
      deploymentName: build.deploymentName,
      buildId: build.buildId,
      buildIdFrom: build.source,
      downstreamQueues: pollers.polling(),
    },
    'worker running',
  );
  return {
    worker,
    downstreams: pollers,
    jobs,
    build,
    shutdown,
    async run() {
      try {
        // Stopped before it ran (a signal during start, a poller that failed already): nothing to run.
        if (stopRequested) await pollers.shutdown();
        else await worker.run().finally(() => pollers.shutdown());
        if (failed !== undefined) throw failed;
      } finally {
        clearTimeout(graceOver);
        for (const loop of loops) await loop.stop();
        await deps.http.close();
        await connection.close();
      }
    },
  };
}

/** One line per enabled source whose job this worker does not run: its runs would fail. */
async function reportUnknownJobs(prisma: PrismaClient, jobs: JobRegistry, say: (line: string) => void) {
  const orphans = await enabledSourcesOfOtherJobs(prisma, jobs.types);
  for (const s of orphans) {
    say(
      `source '${s.id}' runs job '${s.jobType}', which this worker does not register (it runs: ${jobs.types.join(', ')}): its runs fail with UNKNOWN_JOB_TYPE until a worker with that job polls this task queue`,
    );
  }
}
