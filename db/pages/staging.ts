/**
 * Staged pages (`fetched_page`): where fetched records wait between `fetchPage` and `storePage`,
 * so Temporal's history carries counts and cursors, never the records themselves (R2).
 */
import { createHash } from 'node:crypto';
import { Prisma, type PrismaClient } from '../../prisma/generated/client.ts';
import { heldAtPage, type PageFence } from '../fence.ts';
import type { AdmissionRow } from '../retry/breaker.ts';

/** Where a staged page stands; its records stay in the table (storePage takes them). */
export interface StagedPage {
  key: string;
  startCursor: string | null;
  cursor: string | null;
  complete: boolean;
  recordCount: number;
}

/** The columns of {@link StagedPage}, for SELECT and RETURNING alike. */
const STAGED_COLUMNS = Prisma.raw(
  'key, start_cursor AS "startCursor", cursor, complete, record_count AS "recordCount"',
);

/** The staged page of `key` (without its records), or undefined. Read-only. */
export async function loadStagedPage(
  db: Pick<PrismaClient, '$queryRaw'>,
  key: string,
): Promise<StagedPage | undefined> {
  const [row] = await db.$queryRaw<StagedPage[]>`
    SELECT ${STAGED_COLUMNS} FROM fetched_page WHERE key = ${key}`;
  return row;
}

export interface Append {
  key: string;
  /** Only the holder of the run's lease may stage, and only the page the run is at. */
  fence: PageFence;
  startCursor: string | null;
  /** The state this append continues from; undefined = the page is not staged yet. */
  from: { cursor: string | null; recordCount: number } | undefined;
  records: readonly unknown[];
  cursor: string | null;
  complete: boolean;
  /**
   * The pages after `fence.pageNo` that the same partner response fills (its overflow), in page
   * order from `fence.pageNo + 1`; empty when the response fitted. `cursor` is then the first
   * one's start cursor, and the partner's cursor is the last one's.
   */
  carried?: readonly CarriedRow[];
  now: Date;
  expiresAt: Date;
  /**
   * The breaker's admission of the page's next partner call (db/retry/admission-sql.ts),
   * asked in the same statement once the append applied: one round trip less per partner call.
   * An attempt that stops before making that call leaves it counted as a call in the retry
   * budget's window (a trial place it was given, it frees).
   */
  admitNext?: Prisma.Sql;
}

/** A staged page as an append left it, with the breaker's answer for the next call when asked. */
export type AppendedPage = StagedPage & { admission?: AdmissionRow | null };

/** A page staged whole by the append of the page before it (see {@link Append.carried}). */
export interface CarriedRow {
  key: string;
  startCursor: string;
  cursor: string | null;
  complete: boolean;
  records: readonly unknown[];
}

/**
 * The fence of every staging write: the run is held by the fence at its page, its row read FOR
 * SHARE so that a write racing a storePage of the same page waits for it.
 */
function runAtPage(fence: PageFence): Prisma.Sql {
  return Prisma.sql`EXISTS (SELECT 1 FROM fetch_run WHERE ${heldAtPage(fence)} FOR SHARE)`;
}

/** The digest a cursor is remembered by in `run_cursor`. */
export function cursorDigest(cursor: string): string {
  return createHash('sha256').update(cursor).digest('base64url');
}

/** `NOT EXISTS` a `run_cursor` row of the run with the digest: the cursor was never reached before. */
function unseen(fence: PageFence, digest: string | null): Prisma.Sql {
  if (digest === null) return Prisma.sql`TRUE`;
  return Prisma.sql`NOT EXISTS (SELECT 1 FROM run_cursor WHERE fetch_run_id = ${fence.fetchRunId}::uuid AND digest = ${digest})`;
}

/**
 * Appends records fetched from `from.cursor` to a staged page (the first append writes the page's
 * row, each later one a part: `fetched_page_part`), stages the pages its response
 * carried over (`carried`), and remembers the partner's new cursor for the run. Conditional three
 * times over (R1):
 * - fenced: the run must still be held by `fence.leaseToken` and be at page `fence.pageNo` (a page
 *   already stored is never staged again by a late attempt). The run row is read FOR SHARE, so an
 *   append racing a storePage of the same page waits for it and then sees the page stored;
 * - optimistic: the staged page must still be exactly at `from` (absent, when `from` is undefined),
 *   so two attempts of the same fetch — a zombie and its retry — never interleave records;
 * - loop-free: the run must never have reached the partner's cursor before (`run_cursor`), so a
 *   partner whose cursors come back round (A → B → A) cannot make the run fetch the same pages
 *   again.
 * The carried pages are written only when the append applied, so under the same three conditions:
 * while the run is at `fence.pageNo`, no attempt of a later page can be running, and a carried
 * page staged before (by an earlier history of this page that was dropped) is replaced whole.
 * One statement: the staged page, the carried pages and the remembered cursor change together or
 * not at all. Returns the staged page as the append left it, or undefined when the append did not
 * apply (the caller finds out which condition failed).
 */
export async function appendToStagedPage(
  db: Pick<PrismaClient, '$queryRaw'>,
  a: Append,
): Promise<AppendedPage | undefined> {
  const records = JSON.stringify(a.records);
  // The partner's cursor is the last carried page's, when the response spilled over: the cursors
  // of this page and of the carried pages before the last are the engine's own (carry cursors),
  // unique by construction, and no partner page was fetched for them.
  const carried = a.carried ?? [];
  const last = carried.at(-1);
  const reached = last ? last.cursor : a.cursor;
  const reachedAt = a.fence.pageNo + carried.length;
  const digest = reached === null ? null : cursorDigest(reached);
  const staged =
    a.from === undefined
      ? Prisma.sql`
          INSERT INTO fetched_page (key, start_cursor, cursor, complete, record_count, records, updated_at, expires_at)
          SELECT ${a.key}, ${a.startCursor}, ${a.cursor}, ${a.complete}, ${a.records.length}, ${records}::jsonb,
                 ${a.now}, ${a.expiresAt}
           WHERE ${runAtPage(a.fence)} AND ${unseen(a.fence, digest)}
          ON CONFLICT (key) DO NOTHING
          RETURNING ${STAGED_COLUMNS}`
      : Prisma.sql`
          UPDATE fetched_page
             SET record_count = record_count + ${a.records.length},
                 cursor = ${a.cursor}, complete = ${a.complete}, updated_at = ${a.now}, expires_at = ${a.expiresAt}
           WHERE key = ${a.key} AND cursor IS NOT DISTINCT FROM ${a.from.cursor}
             AND record_count = ${a.from.recordCount} AND NOT complete
             AND ${runAtPage(a.fence)} AND ${unseen(a.fence, digest)}
          RETURNING ${STAGED_COLUMNS}`;
  // A later append's records are a part of the page of their own, keyed by the page's record count
  // after them: the page's JSON so far is not rewritten (that made a page's staging quadratic).
  const part =
    a.from === undefined || a.records.length === 0
      ? Prisma.sql`SELECT 1`
      : Prisma.sql`
          INSERT INTO fetched_page_part (key, seq, records)
          SELECT key, "recordCount", ${records}::jsonb FROM staged`;
  // A carried page replaced whole (see carriedSql) takes no parts of the page it replaces.
  const staleParts =
    carried.length === 0
      ? Prisma.sql`SELECT 1`
      : Prisma.sql`
          DELETE FROM fetched_page_part
           WHERE key = ANY(${carried.map((c) => c.key)}::text[]) AND EXISTS (SELECT 1 FROM staged)`;
  // Data-modifying CTEs always run to completion, read or not: the part, the carried pages and the
  // cursor row go in exactly when the staging write applied.
  // In the select list: evaluated only for the row the applied append returns.
  const admission =
    a.admitNext === undefined
      ? Prisma.empty
      : Prisma.sql`, (SELECT to_json(n) FROM ${a.admitNext} AS n) AS admission`;
  const [row] = await db.$queryRaw<AppendedPage[]>`
    WITH staged AS (${staged}),
         part AS (${part}),
         stale_parts AS (${staleParts}),
         carried AS (${carriedSql(carried, a)}),
         remembered AS (
           INSERT INTO run_cursor (fetch_run_id, digest, page_no)
           SELECT ${a.fence.fetchRunId}::uuid, ${digest}, ${reachedAt} FROM staged WHERE ${digest}::text IS NOT NULL
           ON CONFLICT DO NOTHING)
    SELECT staged.*${admission} FROM staged`;
  return row;
}

/**
 * The INSERT of an append's carried pages, for a CTE beside the append's `staged`: only when
 * `staged` returned a row. Upserts: a carried page of an earlier history of the page (dropped as
 * stale, then fetched again) gives way to this one.
 */
function carriedSql(carried: readonly CarriedRow[], a: Pick<Append, 'now' | 'expiresAt'>): Prisma.Sql {
  if (carried.length === 0) return Prisma.sql`SELECT 1`;
  const rows = JSON.stringify(
    carried.map((c) => ({
      key: c.key,
      start_cursor: c.startCursor,
      cursor: c.cursor,
      complete: c.complete,
      records: c.records,
    })),
  );
  return Prisma.sql`
    INSERT INTO fetched_page (key, start_cursor, cursor, complete, record_count, records, updated_at, expires_at)
    SELECT c.key, c.start_cursor, c.cursor, c.complete, jsonb_array_length(c.records), c.records,
           ${a.now}, ${a.expiresAt}
      FROM jsonb_to_recordset(${rows}::jsonb)
           AS c(key text, start_cursor text, cursor text, complete boolean, records jsonb)
     WHERE EXISTS (SELECT 1 FROM staged)
    ON CONFLICT (key) DO UPDATE
       SET start_cursor = EXCLUDED.start_cursor, cursor = EXCLUDED.cursor, complete = EXCLUDED.complete,
           record_count = EXCLUDED.record_count, records = EXCLUDED.records,
           updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at`;
}

/** True when the run reached `cursor` before (a staged or stored page of it ended there). */
export async function cursorSeen(
  db: Pick<PrismaClient, '$queryRaw'>,
  fetchRunId: string,
  cursor: string,
): Promise<boolean> {
  const rows = await db.$queryRaw<{ seen: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM run_cursor WHERE fetch_run_id = ${fetchRunId}::uuid AND digest = ${cursorDigest(cursor)}) AS seen`;
  return rows[0]?.seen ?? false;
}

/**
 * Readies the run's cursor memory for staging page `fence.pageNo` from scratch, and returns how many
 * partner pages the run has staged before it (what a job's `maxPages` counts). Cursors remembered
 * for this page or later belong to a staged page that is gone (dropped as stale, or expired): they
 * are forgotten, unless a staged page of `key` exists again by now (a concurrent attempt's: its
 * cursors are live). Fenced: a stale attempt forgets nothing.
 */
export async function startPageCursors(
  db: Pick<PrismaClient, '$queryRaw'>,
  key: string,
  fence: PageFence,
): Promise<number> {
  // One statement: its count sees the cursors as they were before its own delete, so the deleted
  // ones are taken off.
  const rows = await db.$queryRaw<{ n: number }[]>`
    WITH forgotten AS (${forgetCursorsSql(key, fence, runAtPage(fence))})
    SELECT ${cursorsLeftSql(fence.fetchRunId)} AS n`;
  return rows[0]?.n ?? 0;
}

/**
 * The DELETE of {@link startPageCursors} (returning a row per cursor forgotten), while `atPage`:
 * the condition that `fence` holds the run at its page, which also takes the run's row lock
 * before any cursor row's — the order every append takes them in, so that the two never wait on
 * each other. For a data-modifying CTE named `forgotten`, next to {@link cursorsLeftSql}.
 */
export function forgetCursorsSql(key: string, fence: PageFence, atPage: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`
    DELETE FROM run_cursor
     WHERE fetch_run_id = ${fence.fetchRunId}::uuid AND page_no >= ${fence.pageNo}
       AND NOT EXISTS (SELECT 1 FROM fetched_page WHERE key = ${key})
       AND ${atPage}
    RETURNING 1`;
}

/** The run's cursors left after the CTE `forgotten` ({@link forgetCursorsSql}): an int. */
export function cursorsLeftSql(fetchRunId: string): Prisma.Sql {
  return Prisma.sql`((SELECT count(*) FROM run_cursor WHERE fetch_run_id = ${fetchRunId}::uuid)
            - (SELECT count(*) FROM forgotten))::int`;
}

/** True when `fence` holds the run at its page now. */
export async function heldAtPageNow(db: Pick<PrismaClient, '$queryRaw'>, fence: PageFence): Promise<boolean> {
  const rows = await db.$queryRaw<{ held: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM fetch_run WHERE ${heldAtPage(fence)}) AS held`;
  return rows[0]?.held ?? false;
}

/**
 * Removes a staged page left by an attempt that started the page elsewhere, only while `fence`
 * still holds the run at that page: a stale attempt cannot delete the current owner's page.
 */
export async function dropStaleStagedPage(
  db: Pick<PrismaClient, '$executeRaw'>,
  key: string,
  fence: PageFence,
): Promise<void> {
  await db.$executeRaw`
    DELETE FROM fetched_page
     WHERE key = ${key}
       AND ${runAtPage(fence)}`;
}

/** Removes a staged page (idempotent). */
export async function dropStagedPage(db: Pick<PrismaClient, 'fetchedPage'>, key: string): Promise<void> {
  await db.fetchedPage.deleteMany({ where: { key } });
}
