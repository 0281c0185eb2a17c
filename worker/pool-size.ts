/**
 * How many database connections a long-running process opens: one for everything it runs at once
 * that may hold one (a query, or one transaction, at a time), so that nothing it runs waits for a
 * connection another part of the same process holds.
 */
import pg from 'pg';
import { type Config, databaseUrl } from '../runtime/config.ts';
import { CONNECT_TIMEOUT_MS, type PoolOptions } from '../db/client.ts';
import { engineConnection, readDownstreamSlots } from '../db/pool-config.ts';
import { DEFAULT_PUBLISHER_LOOPS } from './outbox/publisher.ts';

export interface PoolDemand {
  /** Activities on the process's own task queue at once. */
  activitySlots?: number;
  /** Local activities at once: the database steps (workflows/db-steps.ts), as many as the activity slots. */
  localActivitySlots?: number;
  /** The downstream pollers' slots: every downstream's `maxConcurrentCalls`. */
  downstreamSlots?: number;
  /** Publisher claim-and-deliver loops: each claims or marks, one statement at a time. */
  publisherLoops?: number;
  /** The process's own periodic passes (health sampler, cleanup, sweep, downstream refresh). */
  background: number;
}

/** The connections `demand` may hold at once. */
export function poolSize(demand: PoolDemand): number {
  const { activitySlots = 0, localActivitySlots = 0, downstreamSlots = 0, publisherLoops = 0 } = demand;
  return activitySlots + localActivitySlots + downstreamSlots + publisherLoops + demand.background;
}

/** A worker's passes beside its slots: health sampler, cleanup, stuck-run sweep, downstream refresh. */
export const WORKER_BACKGROUND = 4;
/** A publisher's passes beside its loops: health sampler, retention of published events. */
export const PUBLISHER_BACKGROUND = 2;

/** The pool of `durable-fetch worker`; `downstreamSlots` as read at start. */
export function workerPool(config: Config, downstreamSlots: number): Required<Omit<PoolOptions, 'pooling'>> {
  const max = poolSize({
    activitySlots: config.worker.activitySlots,
    localActivitySlots: config.worker.activitySlots,
    downstreamSlots,
    background: WORKER_BACKGROUND,
  });
  return { max, bounded: true };
}

/** The pool of `durable-fetch publisher`. */
export function publisherPool(loops = DEFAULT_PUBLISHER_LOOPS): Required<Omit<PoolOptions, 'pooling'>> {
  return { max: poolSize({ publisherLoops: loops, background: PUBLISHER_BACKGROUND }), bounded: true };
}

/**
 * The pool of `npm start`: the worker and the publisher in one process, sharing one health sampler
 * and one cleanup pass (the publisher's retention).
 */
export function startPool(config: Config, downstreamSlots: number): Required<Omit<PoolOptions, 'pooling'>> {
  const max = poolSize({
    activitySlots: config.worker.activitySlots,
    localActivitySlots: config.worker.activitySlots,
    downstreamSlots,
    publisherLoops: DEFAULT_PUBLISHER_LOOPS,
    // Sampler, sweep, downstream refresh, retention.
    background: WORKER_BACKGROUND,
  });
  return { max, bounded: true };
}

/**
 * The downstream pollers' slots as the database says now (a downstream added later shares the
 * pool until the process restarts). 0 when it cannot be read: the database check that follows
 * reports why.
 */
export async function downstreamSlotsAt(config: Config, url = databaseUrl(config)): Promise<number> {
  const client = new pg.Client({
    ...engineConnection(url, config.database.pooling),
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  try {
    await client.connect();
    return await readDownstreamSlots(client);
  } catch {
    return 0;
  } finally {
    await client.end().catch(() => undefined);
  }
}
