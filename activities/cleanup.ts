/**
 * Expiry of idempotency records and staged pages. Both carry `expires_at`, set to
 * `DURABLE_FETCH_IDEMPOTENCY_RETENTION_DAYS` (default 30) after they were written; this module
 * deletes what has expired, once on demand (`durable-fetch cleanup`) or periodically in workers.
 *
 * Why expiry is safe: the retention *is* the dedupe window. A repeat of a step within it returns
 * the stored result; a key past its retention can no longer dedupe a repeat, whether or not its row
 * is still there, so deleting it changes nothing anyone may rely on. A staged page that old belongs
 * to a run abandoned for the whole window; resuming such a run fetches the page again.
 */
import { pruneCallCounts } from '../db/retry/breaker.ts';
import { deleteExpiredPages, deleteExpiredRecords, deletePublishedEvents } from '../db/cleanup.ts';
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { Logger } from '../runtime/logger.ts';
import { type Periodic, startPeriodic } from '../runtime/periodic.ts';

export interface DeleteExpiredOptions {
  /** Cut-off: rows with `expires_at < now` go. Default: the database's clock, per batch. */
  now?: Date;
  /** Rows per DELETE statement (per table); keeps each statement's locks and WAL small. Default 1000. */
  batchSize?: number;
  /** At most this many batches per table in one pass; the next pass continues. Default 100. */
  maxBatches?: number;
  /**
   * Also delete outbox events published more than this long ago (R5 retention). Default: keep them.
   * Only published events go: pending and dead ones stay until delivered or requeued.
   */
  publishedEventRetentionMs?: number;
}

export interface Deleted {
  idempotencyRecords: number;
  stagedPages: number;
  publishedEvents: number;
  /** Per-second partner call counts past every breaker and budget window (R8). */
  callCounts: number;
}

/** How old a partner call count must be to go: twice the longest window a downstream may have. */
export const CALL_COUNT_RETENTION_MS = 2 * 3_600_000;

type Db = Pick<PrismaClient, '$executeRaw'>;

/**
 * Deletes expired `idempotency_record` and `fetched_page` rows in bounded batches, each its own
 * statement: a table is done when a batch deletes fewer than `batchSize` rows, or after
 * `maxBatches` batches (then the rest waits for the next pass). Returns how many rows this call
 * deleted.
 *
 * Idempotent, and safe to run in several processes at once: each batch locks its rows with
 * `FOR UPDATE SKIP LOCKED`, so concurrent passes never wait on each other (nor on a `storePage`
 * holding a row) and never delete — or count — the same row twice. A row skipped because another
 * transaction holds it is deleted by that pass or by the next one.
 * @throws RangeError when `batchSize` or `maxBatches` is not a positive integer; database errors as
 *   Prisma throws them (batches already committed stay deleted).
 */
export async function deleteExpired(db: Db, options: DeleteExpiredOptions = {}): Promise<Deleted> {
  const { now, batchSize = 1000, maxBatches = 100, publishedEventRetentionMs } = options;
  for (const [name, value] of [
    ['batchSize', batchSize],
    ['maxBatches', maxBatches],
  ] as const) {
    if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
  }
  const cutoff = now ?? null;
  return {
    idempotencyRecords: await drain(batchSize, maxBatches, () => deleteExpiredRecords(db, cutoff, batchSize)),
    stagedPages: await drain(batchSize, maxBatches, () => deleteExpiredPages(db, cutoff, batchSize)),
    publishedEvents:
      publishedEventRetentionMs === undefined
        ? 0
        : await drain(batchSize, maxBatches, () =>
            deletePublishedEvents(db, cutoff, publishedEventRetentionMs, batchSize),
          ),
    // Small by construction (a row per downstream and second of the last two hours): one statement.
    callCounts: await pruneCallCounts(db, cutoff, CALL_COUNT_RETENTION_MS),
  };
}

// Stopping on a short batch is correct only because of how each batch locks (db/cleanup.ts).
async function drain(batchSize: number, maxBatches: number, batch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    const deleted = await batch();
    total += deleted;
    if (deleted < batchSize) break;
  }
  return total;
}

export interface PeriodicCleanupOptions {
  /** Time between the end of one pass and the start of the next; 0 (or less) disables cleanup. */
  intervalMs: number;
  log: Logger;
  /** Delay before the first pass, so it does not compete with the worker's start. Default 5 s. */
  initialDelayMs?: number;
  /** See {@link DeleteExpiredOptions.publishedEventRetentionMs}. */
  publishedEventRetentionMs?: number;
  /** See {@link DeleteExpiredOptions.maxBatches}. Default 100 (100,000 rows per table per pass). */
  maxBatches?: number;
}

/**
 * Runs {@link deleteExpired} after `initialDelayMs`, then `intervalMs` after each pass ends
 * (runtime/periodic.ts: jittered, never overlapping, unref'd timers). A failed pass is logged
 * (warn) and the schedule goes on, nothing is thrown. `stop()` cancels the next pass and resolves
 * once a pass in progress has finished; calling it again is harmless.
 */
export function startPeriodicCleanup(db: Db, options: PeriodicCleanupOptions): Periodic {
  const {
    intervalMs,
    log,
    initialDelayMs = Math.min(intervalMs, 5_000),
    publishedEventRetentionMs,
    maxBatches,
  } = options;
  const pass = async () => {
    const t0 = Date.now();
    try {
      const deleted = await deleteExpired(db, {
        ...(publishedEventRetentionMs === undefined ? {} : { publishedEventRetentionMs }),
        ...(maxBatches === undefined ? {} : { maxBatches }),
      });
      const total = deleted.idempotencyRecords + deleted.stagedPages + deleted.publishedEvents;
      log[total > 0 ? 'info' : 'debug'](
        { ...deleted, ms: Date.now() - t0 },
        'deleted expired idempotency records, staged pages, published outbox events and old call counts',
      );
    } catch (err) {
      log.warn({ err }, `cleanup of expired rows failed; next attempt in ${intervalMs} ms`);
    }
  };
  return startPeriodic(pass, { intervalMs, initialDelayMs });
}
