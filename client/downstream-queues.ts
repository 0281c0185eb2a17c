/**
 * Temporal's server-side limits on the task queue of a downstream's partner calls (R8), set with
 * UpdateTaskQueueConfig on the activity queue `downstreamTaskQueue(taskQueue, id)`: the queue's
 * dispatch rate (`callsPerSecond`, across every worker process), the default rate of each fairness
 * key (`sourceCallsPerSecond`: each source, scaled by its weight) and the sources' weights
 * (`sourceWeights`, as weight overrides). A setting left out unsets its limit on the server. The
 * worker applies them at start and when the settings change; `sources apply` after it commits.
 *
 * Temporal writes a task queue's config on the root partition of its workflow queue and copies it
 * to the activity queue's partitions afterwards: a read of the activity queue (what is in force)
 * can show the old config for a while after a write succeeded. An apply therefore reads back until
 * the activity queue reports what it wrote, for a bounded time, and says whether it did.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { type DownstreamSettings, downstreamTaskQueue } from '../db/ledger/downstreams.ts';
import { errorMessage } from '../runtime/errors.ts';

type TaskQueueConfig = temporal.api.taskqueue.v1.ITaskQueueConfig;
type RateLimitConfig = temporal.api.taskqueue.v1.IRateLimitConfig;

/** temporal.api.enums.v1 values (the proto package is CommonJS-only): TaskQueueType, TaskQueueKind. */
const ACTIVITY = 2;
const NORMAL = 1;
/** temporal.api.enums.v1.RateLimitSource values. */
const SOURCES: Record<number, 'api' | 'worker' | 'system'> = { 1: 'api', 2: 'worker', 3: 'system' };

/** A limit the server holds, with why and by whom it was set. */
export interface QueueLimit {
  perSecond: number;
  reason: string;
  setBy: string;
  setAt?: Date;
}

/** What Temporal holds for a downstream's task queue. */
export interface DownstreamQueueConfig {
  downstream: string;
  taskQueue: string;
  /** The queue's limit set through the API (absent: none). */
  queueLimit?: QueueLimit;
  /** The limit of each fairness key (source) before its weight (absent: none). */
  sourceLimit?: QueueLimit;
  /** Weight overrides by source id. */
  sourceWeights: Record<string, number>;
  /** The limit the server applies now and where it comes from (a worker's own, the system default). */
  effective?: { perSecond: number; source: 'api' | 'worker' | 'system' | 'unknown' };
}

export type AppliedQueueConfig =
  | {
      downstream: string;
      taskQueue: string;
      applied: true;
      changed: boolean;
      /**
       * The activity queue reports the settings (false: written, but Temporal had not copied them
       * to it within the wait; `config` is what it still reported).
       */
      inForce: boolean;
      config: DownstreamQueueConfig;
    }
  /** The server refused or lacks the call: the error, as it said it. */
  | { downstream: string; taskQueue: string; applied: false; error: string };

/** The server keeps rates and weights as 32-bit floats: compare and show them at this precision. */
const rounded = (value: number) => Number(value.toPrecision(6));

function limitOf(config: RateLimitConfig | null | undefined): QueueLimit | undefined {
  const perSecond = config?.rateLimit?.requestsPerSecond;
  if (perSecond === undefined || perSecond === null || !config?.rateLimit) return undefined;
  const seconds = config.metadata?.updateTime?.seconds;
  return {
    perSecond: rounded(perSecond),
    reason: config.metadata?.reason ?? '',
    setBy: config.metadata?.updateIdentity ?? '',
    ...(seconds === undefined || seconds === null ? {} : { setAt: new Date(Number(seconds) * 1000) }),
  };
}

function weightsOf(config: TaskQueueConfig | null | undefined): Record<string, number> {
  return Object.fromEntries(
    Object.entries(config?.fairnessWeightOverrides ?? {}).map(([key, weight]) => [key, rounded(weight)]),
  );
}

/** What Temporal holds for `downstream`'s task queue (nothing set reads as no limits, no weights). */
export async function describeDownstreamQueueConfig(
  client: Client,
  namespace: string,
  taskQueue: string,
  downstream: string,
): Promise<DownstreamQueueConfig> {
  const queue = downstreamTaskQueue(taskQueue, downstream);
  const described = await client.workflowService.describeTaskQueue({
    namespace,
    taskQueue: { name: queue, kind: NORMAL },
    taskQueueType: ACTIVITY,
    reportConfig: true,
  });
  const { config, effectiveRateLimit: effective } = described;
  const queueLimit = limitOf(config?.queueRateLimit);
  const sourceLimit = limitOf(config?.fairnessKeysRateLimitDefault);
  return {
    downstream,
    taskQueue: queue,
    ...(queueLimit ? { queueLimit } : {}),
    ...(sourceLimit ? { sourceLimit } : {}),
    sourceWeights: weightsOf(config),
    ...(effective?.requestsPerSecond === undefined || effective.requestsPerSecond === null
      ? {}
      : {
          effective: {
            perSecond: rounded(effective.requestsPerSecond),
            source: SOURCES[effective.rateLimitSource ?? 0] ?? 'unknown',
          },
        }),
  };
}

const sameWeights = (a: Record<string, number>, b: Record<string, number>) =>
  Object.keys(a).length === Object.keys(b).length &&
  Object.entries(a).every(([key, weight]) => b[key] === rounded(weight));

/** Whether the server's `config` says what `s` asks for (at the server's float precision). */
const holds = (s: DownstreamSettings, config: DownstreamQueueConfig) =>
  config.queueLimit?.perSecond === optionalRounded(s.callsPerSecond) &&
  config.sourceLimit?.perSecond === optionalRounded(s.sourceCallsPerSecond) &&
  sameWeights(s.sourceWeights, config.sourceWeights);

/**
 * How long an apply reads back for the activity queue to report what it wrote. Temporal copies a
 * config to a partition as soon as that partition's long poll for it returns: milliseconds on a
 * quiet server, seconds on a loaded one (a test read it back stale on a loaded 2-core machine).
 */
export const PROPAGATION_WAIT_MS = 10_000;
const PROPAGATION_POLL_MS = 100;

/** A rate limit update: set to `perSecond`, or (undefined) removed. */
const rateUpdate = (perSecond: number | undefined, reason: string) => ({
  ...(perSecond === undefined ? {} : { rateLimit: { requestsPerSecond: perSecond } }),
  reason,
});

/**
 * Puts `settings`' limits and weights on each downstream's task queue, leaving a queue whose
 * config already says the same untouched (every worker applies them at start). A downstream the
 * server refuses is reported with the server's error, the others are still applied.
 * Each written queue is read back until it reports the settings, for up to `propagationWaitMs`.
 * @param reason why (`worker start`, `sources apply by alice`): kept by the server with each limit.
 */
export async function applyDownstreamQueueConfig(
  client: Client,
  namespace: string,
  taskQueue: string,
  settings: readonly DownstreamSettings[],
  options: { reason?: string; identity?: string; propagationWaitMs?: number } = {},
): Promise<AppliedQueueConfig[]> {
  const identity = options.identity ?? client.options.identity;
  const why = options.reason ?? 'durable-fetch downstream settings';
  const results: AppliedQueueConfig[] = [];
  for (const s of settings) {
    const queue = downstreamTaskQueue(taskQueue, s.id);
    try {
      const before = await describeDownstreamQueueConfig(client, namespace, taskQueue, s.id);
      if (holds(s, before)) {
        results.push({
          downstream: s.id,
          taskQueue: queue,
          applied: true,
          changed: false,
          inForce: true,
          config: before,
        });
        continue;
      }
      const queueSame = before.queueLimit?.perSecond === optionalRounded(s.callsPerSecond);
      const sourceSame = before.sourceLimit?.perSecond === optionalRounded(s.sourceCallsPerSecond);
      const reason = (what: string, value: number | undefined) =>
        `${why}: downstream '${s.id}' ${what} ${value === undefined ? 'unset' : value}`;
      await client.workflowService.updateTaskQueueConfig({
        namespace,
        identity,
        taskQueue: queue,
        taskQueueType: ACTIVITY,
        ...(queueSame
          ? {}
          : {
              updateQueueRateLimit: rateUpdate(s.callsPerSecond, reason('callsPerSecond', s.callsPerSecond)),
            }),
        ...(sourceSame
          ? {}
          : {
              updateFairnessKeyRateLimitDefault: rateUpdate(
                s.sourceCallsPerSecond,
                reason('sourceCallsPerSecond', s.sourceCallsPerSecond),
              ),
            }),
        setFairnessWeightOverrides: s.sourceWeights,
        unsetFairnessWeightOverrides: Object.keys(before.sourceWeights).filter(
          (k) => !(k in s.sourceWeights),
        ),
      });
      const deadline = Date.now() + (options.propagationWaitMs ?? PROPAGATION_WAIT_MS);
      let config = await describeDownstreamQueueConfig(client, namespace, taskQueue, s.id);
      while (!holds(s, config) && Date.now() < deadline) {
        await sleep(PROPAGATION_POLL_MS);
        config = await describeDownstreamQueueConfig(client, namespace, taskQueue, s.id);
      }
      results.push({
        downstream: s.id,
        taskQueue: queue,
        applied: true,
        changed: true,
        inForce: holds(s, config),
        config,
      });
    } catch (err) {
      results.push({ downstream: s.id, taskQueue: queue, applied: false, error: errorMessage(err) });
    }
  }
  return results;
}

const optionalRounded = (value: number | undefined) => (value === undefined ? undefined : rounded(value));
