/**
 * Expiry statements (R5 retention): one bounded batch of expired idempotency records,
 * staged pages or long-published outbox events per call. The passes around them (batching,
 * scheduling) are in activities/cleanup.ts.
 */
import type { PrismaClient } from '../prisma/generated/client.ts';

type Db = Pick<PrismaClient, '$executeRaw'>;

// Be very careful: LIMIT sits above the row locks, so a batch keeps scanning past rows locked by
// someone else until it holds `limit` rows; a short batch therefore means "nothing left that is
// not already being deleted", which is what makes stopping on it correct. A null cut-off means
// the database's clock.

/** Deletes up to `limit` idempotency records expired before `cutoff`; returns how many. */
export function deleteExpiredRecords(db: Db, cutoff: Date | null, limit: number): Promise<number> {
  return db.$executeRaw`
    DELETE FROM idempotency_record WHERE key IN (
      SELECT key FROM idempotency_record WHERE expires_at < COALESCE(${cutoff}::timestamptz, now())
       ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)`;
}

/** Deletes up to `limit` staged pages expired before `cutoff`; returns how many. */
export function deleteExpiredPages(db: Db, cutoff: Date | null, limit: number): Promise<number> {
  return db.$executeRaw`
    DELETE FROM fetched_page WHERE key IN (
      SELECT key FROM fetched_page WHERE expires_at < COALESCE(${cutoff}::timestamptz, now())
       ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)`;
}

/**
 * Deletes up to `limit` outbox events published more than `retentionMs` before `cutoff`; returns
 * how many. Pending and dead events are never touched.
 */
export function deletePublishedEvents(
  db: Db,
  cutoff: Date | null,
  retentionMs: number,
  limit: number,
): Promise<number> {
  return db.$executeRaw`
    DELETE FROM outbox_event WHERE id IN (
      SELECT id FROM outbox_event
       WHERE status = 'published'
         AND published_at < COALESCE(${cutoff}::timestamptz, now()) - ${retentionMs} * interval '1 millisecond'
       ORDER BY published_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)`;
}
