/**
 * The pollers of downstreams' task queues in a worker process (R8): one activity-only Temporal
 * worker per downstream row, on `downstreamTaskQueue(taskQueue, id)`, with the downstream's
 * `maxConcurrentCalls` slots and the process's activities, database pool and metrics. The
 * downstreams are read at start and again every `refreshMs`: a downstream added later gets its
 * poller then, one whose slots changed gets a new one, and each isolated downstream's Temporal
 * limits are applied when they change (client/downstream-queues.ts).
 *
 * Every downstream with a row is polled, isolated or not: runs claimed while a downstream was
 * isolated keep fetching on its queue until they end, whatever it is now (a queue nothing is sent
 * to costs a few idle long polls). Only a downstream whose row is gone loses its poller.
 */
import type { Client } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { NativeConnection, Worker } from '@temporalio/worker';
import type { ActivityDeps } from '../activities/deps.ts';
import { applyDownstreamQueueConfig } from '../client/downstream-queues.ts';
import { type DownstreamSettings, downstreamTaskQueue, listDownstreams } from '../db/ledger/downstreams.ts';
import type { Logger } from '../runtime/logger.ts';
import { type Periodic, startPeriodic } from '../runtime/periodic.ts';
import { buildActivityWorker } from './worker.ts';

export interface DownstreamPollersOptions {
  connection: NativeConnection;
  namespace: string;
  /** The deployment's task queue; each downstream's is derived from it. */
  taskQueue: string;
  deps: ActivityDeps;
  /** The client the Temporal limits are applied through. */
  temporal: () => Promise<Client>;
  log: Logger;
  /** How often the downstreams are read again; 0: at start only. */
  refreshMs: number;
  shutdownGraceTimeMs?: number;
  build?: WorkerDeploymentVersion;
  /** A poller that stopped with an error (the process should stop: its queue is not served). */
  onFailure: (err: unknown) => void;
}

/** One polled downstream queue. */
export interface PolledQueue {
  downstream: string;
  taskQueue: string;
  slots: number;
  isolated: boolean;
  /** The queue's limit this worker sets itself: where the server refused its task-queue config. */
  workerRateLimit?: number;
}

export interface DownstreamPollers {
  /** The downstream queues polled now. */
  polling(): PolledQueue[];
  /** Reads the downstreams again now (the periodic pass does the same). */
  refresh(): Promise<void>;
  /** Stops every poller gracefully (running activities get the grace time) and the refresh. */
  shutdown(): Promise<void>;
}

interface Poller {
  queue: PolledQueue;
  worker: Worker;
  running: Promise<void>;
}

/** What a poller's worker was built from: a change of it needs a new worker. */
const shapeOf = (q: PolledQueue) => `${q.slots}/${q.workerRateLimit ?? '-'}`;

/**
 * Reads the downstreams, starts their pollers and applies their limits, then keeps them in line.
 * @throws what the first read or a worker's creation throws (the process cannot serve its queues).
 */
export async function startDownstreamPollers(options: DownstreamPollersOptions): Promise<DownstreamPollers> {
  const { log } = options;
  const pollers = new Map<string, Poller>();
  /** Pollers replaced by a new one, finishing their running activities. */
  const retiring = new Set<Promise<void>>();
  /** The limits applied per downstream, and the queue limits the server refused (set by pollers). */
  const applied = new Map<string, string>();
  const fallback = new Map<string, number | undefined>();
  let stopping = false;

  const start = async (queue: PolledQueue) => {
    const worker = await buildActivityWorker({
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: queue.taskQueue,
      deps: options.deps,
      maxConcurrentActivityTaskExecutions: queue.slots,
      ...(options.shutdownGraceTimeMs === undefined
        ? {}
        : { shutdownGraceTimeMs: options.shutdownGraceTimeMs }),
      ...(options.build ? { build: options.build } : {}),
      ...(queue.workerRateLimit === undefined
        ? {}
        : { maxTaskQueueActivitiesPerSecond: queue.workerRateLimit }),
    });
    const running = worker.run().catch((err: unknown) => {
      log.error({ err, taskQueue: queue.taskQueue }, 'downstream poller stopped with an error');
      if (!stopping) options.onFailure(err);
    });
    pollers.set(queue.downstream, { queue, worker, running });
    log.info({ ...queue }, 'polling downstream task queue');
  };

  const stop = async (poller: Poller) => {
    if (poller.worker.getState() === 'RUNNING') poller.worker.shutdown();
    await poller.running;
  };

  /** Applies the Temporal limits of the isolated downstreams whose limits changed. */
  const applyLimits = async (isolated: DownstreamSettings[]) => {
    const changed = isolated.filter((s) => applied.get(s.id) !== limitsOf(s));
    if (changed.length === 0) return;
    const client = await options.temporal();
    const results = await applyDownstreamQueueConfig(client, options.namespace, options.taskQueue, changed, {
      reason: 'durable-fetch worker',
    });
    for (const [i, result] of results.entries()) {
      const settings = changed[i] as DownstreamSettings;
      if (result.applied) {
        fallback.delete(settings.id);
        if (result.changed) log.info({ config: result.config }, 'downstream task queue limits applied');
        // Written but not yet reported by the activity queue: checked again at the next refresh
        // (a queue that reports them by then is not written again).
        if (result.inForce) applied.set(settings.id, limitsOf(settings));
        else
          log.warn(
            { downstream: settings.id, taskQueue: result.taskQueue, config: result.config },
            'downstream task queue limits written, not yet in force on the queue: checked again at the next refresh',
          );
        continue;
      }
      // Tried again at every refresh; said once per value. The queue-wide limit still holds across
      // workers when each poller sets it itself (Temporal keeps the last poller's).
      if (fallback.has(settings.id) && fallback.get(settings.id) === settings.callsPerSecond) continue;
      fallback.set(settings.id, settings.callsPerSecond);
      log.warn(
        { downstream: settings.id, taskQueue: result.taskQueue, error: result.error },
        "Temporal refused the downstream's task-queue config: its pollers set the queue's rate limit themselves",
      );
    }
  };

  const sync = async () => {
    const rows = await listDownstreams(options.deps.prisma);
    await applyLimits(rows.filter((s) => s.isolated));
    const wanted = new Map(
      rows.map((s): [string, PolledQueue] => {
        const workerRateLimit = fallback.get(s.id);
        const queue = downstreamTaskQueue(options.taskQueue, s.id);
        const polled = {
          downstream: s.id,
          taskQueue: queue,
          slots: s.maxConcurrentCalls,
          isolated: s.isolated,
        };
        return [s.id, workerRateLimit === undefined ? polled : { ...polled, workerRateLimit }];
      }),
    );
    for (const [id, poller] of pollers) {
      const queue = wanted.get(id);
      if (queue) poller.queue.isolated = queue.isolated;
      if (stopping || (queue && shapeOf(queue) === shapeOf(poller.queue))) continue;
      pollers.delete(id);
      // Its running activities finish within the grace time while the new worker polls.
      const retired = stop(poller).finally(() => retiring.delete(retired));
      retiring.add(retired);
    }
    for (const [id, queue] of wanted) if (!stopping && !pollers.has(id)) await start(queue);
  };

  // One pass at a time: a refresh asked for during the periodic one waits for it.
  let passes: Promise<void> = Promise.resolve();
  const serial = () => (passes = passes.catch(() => undefined).then(sync));
  await serial();
  const refresh = async () => {
    try {
      await serial();
    } catch (err) {
      log.warn({ err }, `reading downstreams failed; next attempt in ${options.refreshMs} ms`);
    }
  };
  const periodic: Periodic = startPeriodic(refresh, {
    intervalMs: options.refreshMs,
    initialDelayMs: options.refreshMs,
  });
  return {
    polling: () => [...pollers.values()].map((p) => ({ ...p.queue })),
    refresh,
    async shutdown() {
      stopping = true;
      await periodic.stop();
      await Promise.all([...[...pollers.values()].map(stop), ...retiring]);
    },
  };
}

/** The settings that make up a downstream's Temporal limits. */
const limitsOf = (s: DownstreamSettings) =>
  JSON.stringify([s.callsPerSecond ?? null, s.sourceCallsPerSecond ?? null, s.sourceWeights]);

/** The one line saying which downstream queues a worker polls; empty when none. */
export function describeDownstreamQueues(queues: readonly PolledQueue[]): string {
  if (queues.length === 0) return '';
  const each = queues.map(
    (q) =>
      `'${q.taskQueue}' (${q.slots} slots${q.isolated ? '' : ', not isolated'}${
        q.workerRateLimit === undefined ? '' : `, ${q.workerRateLimit}/s set by the worker`
      })`,
  );
  return `worker polling downstream task queues ${each.join(', ')}`;
}
