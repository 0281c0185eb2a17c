/**
 * Staged pages (`fetched_page`): where fetched records wait between `fetchPage` and `storePage`,
 * so Temporal's history carries counts and cursors, never the records themselves (R2).
 */
import { Prisma, type PrismaClient } from '../prisma/generated/client.ts';
import { heldAtPage, type PageFence } from './fence.ts';

export interface StagedPage {
  key: string;
  startCursor: string | null;
  cursor: string | null;
  complete: boolean;
  recordCount: number;
  records: unknown[];
}

/** The staged page of `key`, or undefined. */
export async function loadStagedPage(
  db: Pick<PrismaClient, 'fetchedPage'>,
  key: string,
): Promise<StagedPage | undefined> {
  const row = await db.fetchedPage.findUnique({ where: { key } });
  if (!row) return undefined;
  return { ...row, records: row.records as unknown[] };
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
  now: Date;
  expiresAt: Date;
}

/**
 * The fence of every staging write: the run is held by the fence at its page, its row read FOR
 * SHARE so that a write racing a storePage of the same page waits for it.
 */
function runAtPage(fence: PageFence): Prisma.Sql {
  return Prisma.sql`EXISTS (SELECT 1 FROM fetch_run WHERE ${heldAtPage(fence)} FOR SHARE)`;
}

/**
 * Appends records fetched from `from.cursor` to a staged page. Conditional twice over (R1):
 * - fenced: the run must still be held by `fence.leaseToken` and be at page `fence.pageNo` (a page
 *   already stored is never staged again by a late attempt). The run row is read FOR SHARE, so an
 *   append racing a storePage of the same page waits for it and then sees the page stored;
 * - optimistic: the staged page must still be exactly at `from` (absent, when `from` is undefined),
 *   so two attempts of the same fetch — a zombie and its retry — never interleave records.
 * Returns false when the append did not apply; the caller finds out which condition failed.
 */
export async function appendToStagedPage(db: Pick<PrismaClient, '$executeRaw'>, a: Append): Promise<boolean> {
  const records = JSON.stringify(a.records);
  if (a.from === undefined) {
    const inserted = await db.$executeRaw`
      INSERT INTO fetched_page (key, start_cursor, cursor, complete, record_count, records, updated_at, expires_at)
      SELECT ${a.key}, ${a.startCursor}, ${a.cursor}, ${a.complete}, ${a.records.length}, ${records}::jsonb,
             ${a.now}, ${a.expiresAt}
       WHERE ${runAtPage(a.fence)}
      ON CONFLICT (key) DO NOTHING`;
    return inserted === 1;
  }
  const updated = await db.$executeRaw`
    UPDATE fetched_page
       SET records = records || ${records}::jsonb, record_count = record_count + ${a.records.length},
           cursor = ${a.cursor}, complete = ${a.complete}, updated_at = ${a.now}, expires_at = ${a.expiresAt}
     WHERE key = ${a.key} AND cursor IS NOT DISTINCT FROM ${a.from.cursor}
       AND record_count = ${a.from.recordCount} AND NOT complete
       AND ${runAtPage(a.fence)}`;
  return updated === 1;
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
