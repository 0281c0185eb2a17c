/**
 * The statements of a page's store transaction (R1, R3, R5), in the order storePage sends them:
 * lock the run (with its source), take the staged page (with the key's prior record), then one
 * statement that writes the page's events and idempotency record and advances the run under its
 * lease. Few statements on purpose: each is a round trip inside an open transaction.
 */
import { Prisma, type PrismaClient, type Source } from '../../prisma/generated/client.ts';
import { heldBy, type Fence, renewedLease } from '../fence.ts';
import { insertIdempotencyRecordSql, type NewIdempotencyRecord } from './idempotency.ts';
import { insertOutboxEventsSql, type NewOutboxEvent } from '../outbox/outbox.ts';
import { advanceWatermarkSql, type PageWatermark, watermarkSeenSql } from './watermark.ts';

type Tx = Pick<PrismaClient, '$queryRaw'>;

/** What a job's view of its source is built from (activities/job-runtime.ts `jobOf`). */
export type PageSource = Pick<
  Source,
  'id' | 'name' | 'baseUrl' | 'timezone' | 'pageSize' | 'jobType' | 'config'
>;

/**
 * The run's row locked FOR UPDATE if `fence` holds it (`held`), and the source as it is now;
 * undefined when the source does not exist (the run is not locked then). Waits for a concurrent
 * holder of the lock (bounded by the session's lock_timeout).
 */
export async function lockRunWithSource(
  tx: Tx,
  fence: Fence,
  sourceId: string,
): Promise<{ held: boolean; source: PageSource } | undefined> {
  // Be very careful: this row lock is what serialises two attempts of the same run (a zombie and
  // its retry). Whatever must be read race-free after it (the key's idempotency record) is read by
  // a later statement: a statement's snapshot is taken before the lock it waits for.
  const [row] = await tx.$queryRaw<(PageSource & { held: boolean })[]>`
    WITH run AS (SELECT id FROM fetch_run WHERE ${heldBy(fence)} FOR UPDATE)
    SELECT s.id, s.name, s.base_url AS "baseUrl", s.timezone, s.page_size AS "pageSize",
           s.job_type AS "jobType", s.config, EXISTS (SELECT 1 FROM run) AS held
      FROM source s WHERE s.id = ${sourceId}`;
  if (!row) return undefined;
  const { held, ...source } = row;
  return { held, source };
}

/** A staged page as storePage checks it. */
export interface TakenPage {
  cursor: string | null;
  recordCount: number;
  records: unknown[];
}

/** The idempotency record of a stored key: its request fingerprint and stored result. */
export interface PriorRecord {
  fingerprint: string;
  result: unknown;
}

/**
 * Deletes the staged page of `key` (with its parts) and returns it, with the key's idempotency record and whether
 * the source is paused. Under {@link lockRunWithSource}'s lock only; a caller that refuses the
 * page throws, and the rollback puts the staged page back.
 */
export async function takeStagedPage(
  tx: Tx,
  key: string,
  sourceId: string,
): Promise<{ staged: TakenPage | undefined; prior: PriorRecord | undefined; paused: boolean }> {
  const [row] = await tx.$queryRaw<
    {
      cursor: string | null;
      record_count: number | null;
      records: unknown[] | null;
      parts: unknown[][] | null;
      fingerprint: string | null;
      result: unknown;
      paused: boolean | null;
    }[]
  >`
    WITH staged AS (DELETE FROM fetched_page WHERE key = ${key} RETURNING cursor, record_count, records),
         parts AS (DELETE FROM fetched_page_part WHERE key = ${key} RETURNING seq, records)
    SELECT st.cursor, st.record_count, st.records,
           (SELECT json_agg(p.records ORDER BY p.seq) FROM parts p) AS parts, i.fingerprint, i.result,
           (SELECT paused_at IS NOT NULL FROM source WHERE id = ${sourceId}) AS paused
      FROM (SELECT 1) AS one
      LEFT JOIN staged st ON true
      LEFT JOIN idempotency_record i ON i.key = ${key}`;
  const staged =
    row?.record_count == null
      ? undefined
      : {
          cursor: row.cursor,
          recordCount: row.record_count,
          // The first staging write's records, then each later append's part, in order.
          records: [...(row.records ?? []), ...(row.parts ?? []).flat()],
        };
  const prior = row?.fingerprint == null ? undefined : { fingerprint: row.fingerprint, result: row.result };
  return { staged, prior, paused: row?.paused ?? false };
}

/** What a stored page writes beside the job's own rows. */
export interface PageCommit {
  fence: Fence;
  sourceId: string;
  events: readonly NewOutboxEvent[];
  record: NewIdempotencyRecord;
  /** The run after the page: pages stored so far, records added, the partner's next cursor. */
  run: { pagesStored: number; recordCount: number; cursor: string | null };
  leaseTtlMs: number;
  /** The execution that holds the run now (recorded on the row), when known. */
  workflowRunId: string | undefined;
  /** An incremental source's page: its highest cursor value, and whether it moves the watermark. */
  watermark?: PageWatermark;
}

/**
 * One statement: inserts the page's outbox events and its idempotency record, and advances the run
 * (pages, records, cursor, and an incremental source's highest value and watermark) while renewing
 * its lease — the run's part fenced by `heldBy`, the watermark's by the run's. Returns
 * whether the run was advanced (false: the fence no longer holds, and the caller must roll back)
 * and whether the source is paused now. Not idempotent by itself: a second commit of the key
 * fails on the record's (and the events') primary key.
 */
export async function commitPage(tx: Tx, c: PageCommit): Promise<{ advanced: boolean; paused: boolean }> {
  // Data-modifying CTEs always run to completion, read or not.
  const [row] = await tx.$queryRaw<{ advanced: boolean; paused: boolean | null }[]>`
    WITH events AS (${insertOutboxEventsSql(c.events)}),
         record AS (${insertIdempotencyRecordSql(c.record)}),
         run AS (
           UPDATE fetch_run
              SET pages_stored = ${c.run.pagesStored}, records_stored = records_stored + ${c.run.recordCount},
                  cursor = ${c.run.cursor}, updated_at = now(), ${renewedLease(c.leaseTtlMs, c.workflowRunId)},
                  ${watermarkSeenSql(c.watermark)}
            WHERE ${heldBy(c.fence)}
           RETURNING watermark_seen, window_head, business_date)${
             c.watermark === undefined
               ? Prisma.empty
               : Prisma.sql`,
         mark AS (${advanceWatermarkSql(c.sourceId, c.fence.fetchRunId, c.watermark)})`
           }
    SELECT EXISTS (SELECT 1 FROM run) AS advanced,
           (SELECT paused_at IS NOT NULL FROM source WHERE id = ${c.sourceId}) AS paused`;
  return { advanced: row?.advanced ?? false, paused: row?.paused ?? false };
}
