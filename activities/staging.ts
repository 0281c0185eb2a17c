/**
 * Staged pages (`fetched_page`): where fetched records wait between `fetchPage` and `storePage`,
 * so Temporal's history carries counts and cursors, never the records themselves (R2).
 */
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { PartnerRecord } from '../workflows/types.ts';

export interface StagedPage {
  key: string;
  startCursor: string | null;
  cursor: string | null;
  complete: boolean;
  recordCount: number;
  records: PartnerRecord[];
}

type Db = Pick<PrismaClient, '$executeRaw' | 'fetchedPage'>;

/** The staged page of `key`, or undefined. */
export async function loadStagedPage(
  db: Pick<PrismaClient, 'fetchedPage'>,
  key: string,
): Promise<StagedPage | undefined> {
  const row = await db.fetchedPage.findUnique({ where: { key } });
  if (!row) return undefined;
  return { ...row, records: row.records as unknown as PartnerRecord[] };
}

export interface Append {
  key: string;
  startCursor: string | null;
  /** The state this append continues from; undefined = the page is not staged yet. */
  from: { cursor: string | null; recordCount: number } | undefined;
  records: PartnerRecord[];
  cursor: string | null;
  complete: boolean;
  now: Date;
  expiresAt: Date;
}

/**
 * Appends records fetched from `from.cursor` to a staged page. Conditional: it applies only if the
 * staged page is still exactly at `from` (nothing staged yet, when `from` is undefined), so two
 * attempts of the same fetch — a zombie and its retry — can never interleave records (R1).
 * Returns false when another attempt got there first; the caller reloads and continues.
 */
export async function appendToStagedPage(db: Db, a: Append): Promise<boolean> {
  const records = JSON.stringify(a.records);
  if (a.from === undefined) {
    const inserted = await db.$executeRaw`
      INSERT INTO fetched_page (key, start_cursor, cursor, complete, record_count, records, updated_at, expires_at)
      VALUES (${a.key}, ${a.startCursor}, ${a.cursor}, ${a.complete}, ${a.records.length}, ${records}::jsonb,
              ${a.now}, ${a.expiresAt})
      ON CONFLICT (key) DO NOTHING`;
    return inserted === 1;
  }
  const updated = await db.$executeRaw`
    UPDATE fetched_page
       SET records = records || ${records}::jsonb, record_count = record_count + ${a.records.length},
           cursor = ${a.cursor}, complete = ${a.complete}, updated_at = ${a.now}, expires_at = ${a.expiresAt}
     WHERE key = ${a.key} AND cursor IS NOT DISTINCT FROM ${a.from.cursor}
       AND record_count = ${a.from.recordCount} AND NOT complete`;
  return updated === 1;
}

/** Removes a staged page (idempotent). */
export async function dropStagedPage(db: Pick<PrismaClient, 'fetchedPage'>, key: string): Promise<void> {
  await db.fetchedPage.deleteMany({ where: { key } });
}
