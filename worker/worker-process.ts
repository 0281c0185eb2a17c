/**
 * The worker process's one entry function: `durable-fetch worker` and `npm start` both run the
 * worker through it, so the two can never assemble it differently. It registers the jobs of
 * jobs/index.ts (a mistake in the list stops it with one line), says which sources no job of this
 * worker runs, stamps the worker's build (worker/build-version.ts) on its workflow tasks, and runs
 * the periodic stuck-run sweep (and, optionally, the cleanup) beside it.
 */
import type { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { startPeriodicCleanup } from '../activities/cleanup.ts';
import { enabledSourcesOfOtherJobs } from '../db/sources.ts';
import type { JobRegistry } from '../activities/job-api/registry.ts';
import { createActivityDeps } from './activity-deps.ts';
import type { Config } from './config.ts';
import type { PrismaClient } from './db.ts';
import { defaultJobs } from './jobs.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Metrics } from '../runtime/metrics.ts';
import type { Periodic } from '../runtime/periodic.ts';
import { startStuckRunSweep } from './stuck-run-sweep.ts';
import { resolveWorkerBuild, type WorkerBuild } from './build-version.ts';
import { connectNative } from './temporal.ts';
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
  jobs: JobRegistry;
  /** The build it stamps on the workflow tasks it completes (docs/versioning.md). */
  build: WorkerBuild;
  /** Runs until the worker stops (after `worker.shutdown()`), then closes what it opened. */
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
  const deps = createActivityDeps(config, prisma, log, options.metrics, jobs);
  const build = await resolveWorkerBuild(config.projectRoot, config.worker.buildId);
  const worker = await buildWorker({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    deps,
    shutdownGraceTimeMs: config.worker.shutdownGraceMs,
    maxConcurrentActivityTaskExecutions: config.worker.activitySlots,
    build: { deploymentName: build.deploymentName, buildId: build.buildId },
    ...(config.worker.workflowBundlePath
      ? { workflowBundle: { codePath: config.worker.workflowBundlePath } }
      : {}),
  });
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
    },
    'worker running',
  );
  return {
    worker,
    jobs,
    build,
    async run() {
      try {
        await worker.run();
      } finally {
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
