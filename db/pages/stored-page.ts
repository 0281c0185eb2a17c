/**
 * Where a page's fetch attempt starts from, read in the statement that renews the run's lease: the
 * page as this claim stored it already, and the page as it is staged. A page stored already is
 * given back to an execution that asks for it again: a Web UI Reset to a continued-as-new
 * execution, or to a workflow task before the page's store, goes on with the same lease token from
 * an earlier point of the history than the database has reached (R1, R3).
 */
import { Prisma, type PrismaClient, type Source } from '../../prisma/generated/client.ts';
import { heldBy, type PageFence, renewedLease } from '../fence.ts';
import { sourceColumns, sourceOfRow } from '../sources.ts';
import { cursorsLeftSql, forgetCursorsSql, type StagedPage } from './staging.ts';

/** What fetchPage returns for a stored page: its stored record count and the partner's next cursor. */
export interface StoredPage {
  recordCount: number;
  nextCursor: string | null;
}

/** What a fetch attempt of a page starts from, once its lease is renewed. */
export interface PageStart {
  /** This claim's stored page, when the run is past it and its next cursor is known. */
  stored: StoredPage | undefined;
  /** The staged page of the key (without its records), whoever staged it. */
  staged: StagedPage | undefined;
  /** The run's source as it is now (R2: re-read at every step); null when it was deleted. */
  source: Source | null;
  /**
   * The partner pages the run staged before this page (what a job's page limit counts), its cursor
   * memory readied as db/pages/staging.ts `startPageCursors` readies it when nothing is staged.
   */
  pagesFetched: number;
  /** The run's window, when an incremental source's run fixed one. */
  window: FixedWindow | undefined;
  /** The source's watermark, when it has one. */
  watermark: StoredWatermark | undefined;
}

/** A run's window as fetch_run keeps it (activities/job-api/watermark.ts `RunWindow`). */
export interface FixedWindow {
  /** The lower bound, inclusive. */
  since: string;
  /** The upper bound, exclusive; null for an integer cursor. */
  until: string | null;
  /** Whether the run moves the source's watermark. */
  head: boolean;
}

/** A source's watermark as source_watermark keeps it. */
export interface StoredWatermark {
  kind: string;
  value: string;
  /** `YYYY-MM-DD`: the business date of the run that moved it last. */
  businessDate: string;
}

interface StartRow {
  pages_stored: number;
  run_cursor: string | null;
  result: unknown;
  staged_key: string | null;
  startCursor: string | null;
  cursor: string | null;
  complete: boolean | null;
  recordCount: number | null;
  pages_fetched: number;
  window_since: string | null;
  window_until: string | null;
  window_head: boolean | null;
  wm_kind: string | null;
  wm_value: string | null;
  wm_date: string | null;
}

/**
 * One statement: extends the lease by `ttlMs` from now while `fence` holds the run, records
 * `workflowRunId` (when given) as the execution that holds it now — as db/fetch-run.ts
 * `renewLease` does — and reads what the attempt starts from (see {@link PageStart}) and the
 * source `sourceId`. Undefined when the fence does not hold the run: nothing was renewed, read or
 * forgotten.
 */
export async function renewAndStartPage(
  db: Pick<PrismaClient, '$queryRaw'>,
  key: string,
  fence: PageFence,
  ttlMs: number,
  workflowRunId: string | undefined,
  sourceId: string,
): Promise<PageStart | undefined> {
  const [row] = await db.$queryRaw<(StartRow & Record<string, unknown>)[]>`
    WITH run AS (
      UPDATE fetch_run SET ${renewedLease(ttlMs, workflowRunId)} WHERE ${heldBy(fence)}
      RETURNING pages_stored, cursor, window_since, window_until, window_head),
         -- After the renewal, which holds the run's row lock by then (see forgetCursorsSql).
         forgotten AS (${forgetCursorsSql(key, fence, Prisma.sql`EXISTS (SELECT 1 FROM run WHERE run.pages_stored = ${fence.pageNo})`)})
    SELECT ${cursorsLeftSql(fence.fetchRunId)} AS pages_fetched, run.pages_stored, run.cursor AS run_cursor, i.result,
           p.key AS staged_key, p.start_cursor AS "startCursor", p.cursor, p.complete, p.record_count AS "recordCount",
           run.window_since, run.window_until, run.window_head,
           w.kind AS wm_kind, w.value AS wm_value, to_char(w.business_date, 'YYYY-MM-DD') AS wm_date,
           ${sourceColumns('s')}
      FROM run
      LEFT JOIN idempotency_record i ON run.pages_stored > ${fence.pageNo} AND i.key = ${key}
      LEFT JOIN fetched_page p ON p.key = ${key}
      LEFT JOIN source s ON s.id = ${sourceId}
      LEFT JOIN source_watermark w ON w.source_id = ${sourceId}`;
  if (!row) return undefined;
  const staged =
    row.staged_key === null
      ? undefined
      : {
          key: row.staged_key,
          startCursor: row.startCursor,
          cursor: row.cursor,
          complete: row.complete ?? false,
          recordCount: row.recordCount ?? 0,
        };
  return {
    stored: storedPage(row, fence.pageNo),
    staged,
    source: sourceOfRow(row),
    pagesFetched: row.pages_fetched,
    window:
      row.window_head === null || row.window_since === null
        ? undefined
        : { since: row.window_since, until: row.window_until, head: row.window_head },
    watermark:
      row.wm_kind === null || row.wm_value === null || row.wm_date === null
        ? undefined
        : { kind: row.wm_kind, value: row.wm_value, businessDate: row.wm_date },
  };
}

/**
 * The page `pageNo` as stored, when the run is past it: from the page's idempotency record, which
 * keeps the next cursor since it was written, or — for the run's last stored page — from the
 * run's own cursor. Undefined when the run is not past the page or the page's cursor is not known
 * (a record written before it kept the cursor, or expired).
 */
function storedPage(row: StartRow, pageNo: number): StoredPage | undefined {
  if (row.pages_stored <= pageNo) return undefined;
  const result = row.result as { recordCount?: unknown; nextCursor?: unknown } | null;
  if (typeof result?.recordCount !== 'number') return undefined;
  const { recordCount } = result;
  if (typeof result.nextCursor === 'string' || result.nextCursor === null) {
    return { recordCount, nextCursor: result.nextCursor };
  }
  if (row.pages_stored === pageNo + 1) return { recordCount, nextCursor: row.run_cursor };
  return undefined;
}
