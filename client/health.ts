/**
 * Health signals (R10): task-queue backlog from Temporal's DescribeTaskQueue stats (the
 * deployment's queue and every isolated downstream's), the
 * database's own (outbox, dead letters, compensations), and the rule that tells a backlog at
 * risk from a short spike. Used by the worker's sampler (metrics + `queue_sample` history) and by
 * `durable-fetch status`.
 */
import type { Client } from '@temporalio/client';
import { databaseHealth, deleteOldQueueSamples, insertQueueSamples } from '../db/health.ts';
import { type IsolatedQueue, listIsolatedQueues } from '../db/ledger/downstreams.ts';
import { readBreakerStates } from '../db/retry/breaker-views.ts';
import { readOrphanedActions } from '../db/ledger/orphaned-actions.ts';
import { readRetryWaits } from '../db/retry/retry-wait.ts';
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Metrics } from '../runtime/metrics/metrics.ts';
import { observeBreakers } from '../runtime/metrics/breakers.ts';
import { observeRetryWaits } from '../runtime/metrics/runs.ts';

export const TASK_QUEUE_TYPES = ['workflow', 'activity'] as const;
export type TaskQueueType = (typeof TASK_QUEUE_TYPES)[number];

export interface QueueStats {
  taskQueue: string;
  type: TaskQueueType;
  /** The isolated downstream whose task queue this is; absent for the deployment's own. */
  downstream?: string;
  backlog: number;
  oldestAgeSeconds: number;
  /** Tasks added per second (arrival). */
  addRate: number;
  /** Tasks dispatched to workers per second (completion). */
  dispatchRate: number;
}

/** temporal.api.enums.v1.TaskQueueType values (the proto package is CommonJS-only). */
const TYPE_ENUM = { workflow: 1, activity: 2 } as const;
/** temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL */
const KIND_NORMAL = 1;

function seconds(d: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  if (!d) return 0;
  return Number(d.seconds ?? 0) + (d.nanos ?? 0) / 1e9;
}

/** One task queue's backlog, as Temporal reports it now (its stats are approximate). */
export async function describeQueue(
  client: Client,
  namespace: string,
  taskQueue: string,
  type: TaskQueueType,
): Promise<QueueStats> {
  const res = await client.workflowService.describeTaskQueue({
    namespace,
    taskQueue: { name: taskQueue, kind: KIND_NORMAL },
    taskQueueType: TYPE_ENUM[type],
    reportStats: true,
  });
  const stats = res.stats;
  return {
    taskQueue,
    type,
    backlog: Number(stats?.approximateBacklogCount ?? 0),
    oldestAgeSeconds: seconds(stats?.approximateBacklogAge),
    addRate: stats?.tasksAddRate ?? 0,
    dispatchRate: stats?.tasksDispatchRate ?? 0,
  };
}

/** A task queue and task type that `status` and the sampler watch. */
export interface WatchedQueue {
  taskQueue: string;
  type: TaskQueueType;
  /** The isolated downstream whose queue it is. */
  downstream?: string;
}

/**
 * What to watch: the workflow and the activity tasks of each of `taskQueues` (the deployment's),
 * then the activity tasks of each isolated downstream's queue (its pollers run activities only:
 * no workflow task ever waits there). One series per isolated downstream, and one per deployment
 * queue and type: bounded by the downstreams the sources file isolates.
 */
export function watchedQueues(
  taskQueues: readonly string[],
  isolated: readonly IsolatedQueue[],
): WatchedQueue[] {
  return [
    ...taskQueues.flatMap((taskQueue) => TASK_QUEUE_TYPES.map((type) => ({ taskQueue, type }))),
    ...isolated.map((q) => ({ taskQueue: q.taskQueue, type: 'activity' as const, downstream: q.downstream })),
  ];
}

/** {@link describeQueue} of a watched queue, its downstream named. */
async function describeWatched(client: Client, namespace: string, q: WatchedQueue): Promise<QueueStats> {
  const stats = await describeQueue(client, namespace, q.taskQueue, q.type);
  return q.downstream === undefined ? stats : { ...stats, downstream: q.downstream };
}

/**
 * The queues to watch now: `taskQueues`, and with `isolatedOf` (the deployment's task queue) the
 * queue of every downstream isolated in the database now (db/ledger/downstreams.ts).
 */
export async function readWatchedQueues(
  prisma: Pick<PrismaClient, 'downstream'>,
  taskQueues: readonly string[],
  isolatedOf?: string,
): Promise<WatchedQueue[]> {
  const isolated = isolatedOf === undefined ? [] : await listIsolatedQueues(prisma, isolatedOf);
  return watchedQueues(taskQueues, isolated);
}

/** Each watched queue's backlog as Temporal reports it now, in the order given. */
export function describeQueues(
  client: Client,
  namespace: string,
  queues: readonly WatchedQueue[],
): Promise<QueueStats[]> {
  return Promise.all(queues.map((q) => describeWatched(client, namespace, q)));
}

export interface BacklogVerdict {
  risk: boolean;
  /** Why (or why not), in words an operator reads. */
  reason: string;
}

export interface RiskOptions {
  /** History considered, ms. Default 10 minutes. */
  windowMs?: number;
}

/**
 * R10's rule: a backlog is at risk only when, over the window, the oldest task's age keeps
 * growing (never falls, and grows by at least half the time that passed: nothing drains it) or
 * completion stays below arrival in every sample with tasks waiting — never on a short spike.
 * Needs samples spanning at least half the window; fewer is "not enough history". Pure.
 */
export function backlogRisk(
  samples: readonly {
    at: Date;
    oldestAgeSeconds: number;
    backlog: number;
    addRate: number;
    dispatchRate: number;
  }[],
  now: Date,
  options: RiskOptions = {},
): BacklogVerdict {
  const windowMs = options.windowMs ?? 600_000;
  const recent = samples
    .filter((s) => now.getTime() - s.at.getTime() <= windowMs)
    .sort((a, b) => a.at.getTime() - b.at.getTime());
  const first = recent[0];
  const last = recent[recent.length - 1];
  if (!first || !last || recent.length < 3 || last.at.getTime() - first.at.getTime() < windowMs / 2) {
    return { risk: false, reason: 'not enough history yet' };
  }
  const spanSeconds = (last.at.getTime() - first.at.getTime()) / 1000;
  const neverFalls = recent.every(
    (s, i) => i === 0 || s.oldestAgeSeconds >= (recent[i - 1]?.oldestAgeSeconds ?? 0),
  );
  const growth = last.oldestAgeSeconds - first.oldestAgeSeconds;
  const floor = Math.min(60, windowMs / 10_000);
  if (neverFalls && growth >= spanSeconds / 2 && last.oldestAgeSeconds >= floor) {
    return {
      risk: true,
      reason: `oldest task age grew from ${first.oldestAgeSeconds.toFixed(0)} s to ${last.oldestAgeSeconds.toFixed(0)} s over ${spanSeconds.toFixed(0)} s`,
    };
  }
  if (recent.every((s) => s.backlog > 0 && s.dispatchRate < s.addRate)) {
    return {
      risk: true,
      reason: `completion (${last.dispatchRate.toFixed(2)}/s) below arrival (${last.addRate.toFixed(2)}/s) for ${spanSeconds.toFixed(0)} s`,
    };
  }
  return { risk: false, reason: 'oldest age not growing; completion keeps up' };
}

export interface Sampler {
  stop(): Promise<void>;
}

/**
 * Every `intervalMs`: samples each task queue (workflow and activity; with `isolatedQueuesOf`, also
 * the activity queue of every downstream isolated now, read from the database on every tick, so a
 * downstream isolated while the process runs is sampled from the next tick, and one no longer
 * isolated loses its series) and the database (its health, retry waits, orphaned actions, every
 * downstream's breaker state), sets the gauges, stores the queue samples for `status`, and drops
 * samples older than a day. Temporal and the database are sampled apart:
 * `durable_fetch_dependency_up` says whether each answered (the alerts
 * DurableFetchDatabaseUnreachable and DurableFetchTemporalUnreachable read it). Errors are logged
 * and the next tick tries again.
 */
export function startSampler(options: {
  prisma: PrismaClient;
  temporal: () => Promise<Client>;
  namespace: string;
  /** The deployment's task queues: their workflow and activity tasks. */
  taskQueues: readonly string[];
  /** The deployment's task queue whose isolated downstreams' queues are sampled too. */
  isolatedQueuesOf?: string;
  metrics: Metrics;
  intervalMs: number;
  log: Logger;
}): Sampler {
  const { prisma, metrics, log } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let ticks = 0;
  /** The isolated downstreams' queues last read, and those whose series the gauges hold. */
  let isolated: readonly IsolatedQueue[] = [];
  const isolatedSeries = new Set<string>();
  const queueGauges = [
    metrics.taskQueueBacklog,
    metrics.taskQueueOldestAge,
    metrics.taskQueueAddRate,
    metrics.taskQueueDispatchRate,
  ];
  /** The isolated queues now; on a failed read, those last read (the database sample flags it). */
  const readIsolated = async (): Promise<readonly IsolatedQueue[]> => {
    if (options.isolatedQueuesOf === undefined) return isolated;
    try {
      isolated = await listIsolatedQueues(prisma, options.isolatedQueuesOf);
    } catch (err) {
      log.debug({ error: String(err) }, 'isolated downstream queues not read: sampling those last read');
    }
    return isolated;
  };
  // Each dependency is sampled on its own, so that one being out of reach neither hides the other
  // nor leaves its gauges at their last values unflagged: `durable_fetch_dependency_up` says which.
  const sampleTemporal = async (queues: readonly IsolatedQueue[]): Promise<QueueStats[]> => {
    const client = await options.temporal();
    const stats = await describeQueues(client, options.namespace, watchedQueues(options.taskQueues, queues));
    for (const s of stats) {
      const labels = { task_queue: s.taskQueue, type: s.type };
      metrics.taskQueueBacklog.set(labels, s.backlog);
      metrics.taskQueueOldestAge.set(labels, s.oldestAgeSeconds);
      metrics.taskQueueAddRate.set(labels, s.addRate);
      metrics.taskQueueDispatchRate.set(labels, s.dispatchRate);
    }
    // A downstream no longer isolated (or gone) keeps no series: the gauges hold one per queue watched.
    const now = new Set(queues.map((q) => q.taskQueue));
    for (const q of isolatedSeries) {
      if (now.has(q)) continue;
      for (const gauge of queueGauges) gauge.remove({ task_queue: q, type: 'activity' });
      isolatedSeries.delete(q);
    }
    for (const q of now) isolatedSeries.add(q);
    return stats;
  };
  const sampleDatabase = async (stats: QueueStats[]) => {
    if (stats.length > 0) await insertQueueSamples(prisma, stats);
    // R1's retry-wait state: runs whose step waits for its next attempt, by error class.
    observeRetryWaits(metrics, (await readRetryWaits(prisma)).byErrorClass);
    const db = await databaseHealth(prisma);
    metrics.outboxPending.set(db.outboxPending);
    metrics.outboxOldestPendingAge.set(db.outboxOldestPendingAgeSeconds);
    metrics.deadLettersOpen.set(db.deadLettersOpen);
    metrics.compensationsNeedsManual.set(db.compensationsNeedsManual);
    metrics.credentialsNeedingReauthorization.set(db.credentialsNeedingReauthorization);
    metrics.downstreamStraysUnsettled.set(db.straysUnsettled);
    metrics.orphanedActions.set((await readOrphanedActions(prisma, { limit: 1 })).count);
    // R8's breakers live in PostgreSQL: every worker reports the state they all share.
    observeBreakers(metrics, await readBreakerStates(prisma));
    if (ticks++ % 100 === 0) {
      await deleteOldQueueSamples(prisma);
    }
  };
  /** Runs `part`, flags whether `dependency` answered, and logs a failure; never throws. */
  const sampled = async <T>(dependency: 'database' | 'temporal', part: () => Promise<T>, failed: T) => {
    try {
      const result = await part();
      metrics.dependencyUp.set({ dependency }, 1);
      return result;
    } catch (err) {
      metrics.dependencyUp.set({ dependency }, 0);
      log.warn({ error: String(err), dependency }, 'health sample failed');
      return failed;
    }
  };
  const tick = async () => {
    const queues = await readIsolated();
    const stats = await sampled('temporal', () => sampleTemporal(queues), []);
    await sampled('database', () => sampleDatabase(stats), undefined);
  };
  const loop = () => {
    if (stopped) return;
    running = tick().finally(() => {
      if (!stopped) timer = setTimeout(loop, options.intervalMs);
    });
  };
  loop();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
