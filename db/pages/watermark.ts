/**
 * The statements of incremental sources: a run fixes its window once (fenced), a stored page
 * moves the run's highest value and, for a head run, the source's watermark — only forward, in
 * the page's own transaction (page-store.ts `commitPage`) — and an operator reads or sets the
 * watermark back (audited by the caller).
 */
import { Prisma, type PrismaClient } from '../../prisma/generated/client.ts';
import { type Fence, heldBy } from '../fence.ts';
import type { FixedWindow, StoredWatermark } from './stored-page.ts';

type Db = Pick<PrismaClient, '$queryRaw'>;

/** The kinds of cursor values, as the SQL casts that order them. */
const CASTS = { timestamp: Prisma.raw('timestamptz'), number: Prisma.raw('numeric') } as const;

/** A stored page's part in the watermark (`PageCommit.watermark`). */
export interface PageWatermark {
  kind: keyof typeof CASTS;
  /** The page's highest cursor value; undefined for a page without records. */
  highest: string | undefined;
  /** The partner returns records in cursor order: a head run moves the watermark with every page. */
  ordered: boolean;
  /** The run's last page: a head run moves the watermark to the highest value it stored. */
  last: boolean;
}

/** `a > b` as values of `kind` (both text). */
function above(kind: PageWatermark['kind'], a: Prisma.Sql, b: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`(${a})::${CASTS[kind]} > (${b})::${CASTS[kind]}`;
}

/** The SET item of `fetch_run.watermark_seen` for a stored page: the higher of the two. */
export function watermarkSeenSql(w: PageWatermark | undefined): Prisma.Sql {
  if (w?.highest === undefined) return Prisma.sql`watermark_seen = watermark_seen`;
  const v = Prisma.sql`${w.highest}::text`;
  return Prisma.sql`watermark_seen = CASE WHEN watermark_seen IS NULL OR ${above(w.kind, v, Prisma.raw('watermark_seen'))}
                                         THEN ${v} ELSE watermark_seen END`;
}

/**
 * A data-modifying statement for a CTE after `run` (the fenced UPDATE of the run, returning
 * `watermark_seen`, `window_head` and `business_date`): for a head run's page that moves it,
 * raises the source's watermark to the run's highest stored value — never lowers it (a value of
 * another kind, from before the source's config changed, is replaced).
 */
export function advanceWatermarkSql(sourceId: string, fetchRunId: string, w: PageWatermark): Prisma.Sql {
  const moves = w.ordered || w.last;
  const kind = w.kind;
  return Prisma.sql`
    INSERT INTO source_watermark AS w (source_id, kind, value, business_date, fetch_run_id, updated_at)
    SELECT ${sourceId}, ${kind}, run.watermark_seen, run.business_date, ${fetchRunId}::uuid, now()
      FROM run WHERE run.window_head IS TRUE AND run.watermark_seen IS NOT NULL AND ${moves}
    ON CONFLICT (source_id) DO UPDATE
       SET value = EXCLUDED.value, kind = EXCLUDED.kind, fetch_run_id = EXCLUDED.fetch_run_id,
           business_date = CASE WHEN w.kind = EXCLUDED.kind THEN GREATEST(w.business_date, EXCLUDED.business_date)
                                ELSE EXCLUDED.business_date END,
           updated_at = now()
     WHERE w.kind <> EXCLUDED.kind OR ${above(kind, Prisma.raw('EXCLUDED.value'), Prisma.raw('w.value'))}
        OR (w.value = EXCLUDED.value AND EXCLUDED.business_date > w.business_date)
    RETURNING 1`;
}

/**
 * Fixes the run's window to `window`, computed from the source's watermark `basedOn` (its value;
 * null: none), unless the run has a window already: one statement, fenced. Only while the
 * watermark is still `basedOn`: a window computed from a watermark an operator has just moved
 * would undo the move. Returns the window the run reads (the one given, or the one an earlier
 * attempt fixed), `stale` when the watermark moved meanwhile (compute it again), or undefined when
 * the fence no longer holds the run.
 */
export async function fixRunWindow(
  db: Db,
  fence: Fence,
  window: FixedWindow,
  basedOn: string | null,
): Promise<FixedWindow | 'stale' | undefined> {
  const [row] = await db.$queryRaw<{ since: string | null; until: string | null; head: boolean | null }[]>`
    WITH fixed AS (
      UPDATE fetch_run r SET window_since = ${window.since}, window_until = ${window.until},
                             window_head = ${window.head}
       WHERE ${heldBy(fence, 'r')} AND r.window_head IS NULL
         AND (SELECT w.value FROM source_watermark w WHERE w.source_id = r.source_id)
             IS NOT DISTINCT FROM ${basedOn}::text
      RETURNING window_since, window_until, window_head)
    SELECT COALESCE(f.window_since, r.window_since) AS since,
           CASE WHEN f.window_head IS NULL THEN r.window_until ELSE f.window_until END AS until,
           COALESCE(f.window_head, r.window_head) AS head
      FROM fetch_run r LEFT JOIN fixed f ON true
     WHERE ${heldBy(fence, 'r')}`;
  if (!row) return undefined;
  if (row.since === null || row.head === null) return 'stale';
  return { since: row.since, until: row.until, head: row.head };
}

/** A source's watermark; undefined when it has none. */
export async function findWatermark(db: Db, sourceId: string): Promise<StoredWatermark | undefined> {
  const [row] = await db.$queryRaw<StoredWatermark[]>`
    SELECT kind, value, to_char(business_date, 'YYYY-MM-DD') AS "businessDate"
      FROM source_watermark WHERE source_id = ${sourceId}`;
  return row;
}

/**
 * Sets a source's watermark to `to` (moving it back or forward), or removes it (`to` undefined:
 * the next run starts from the source's configured start). The source's runs whose windows were
 * fixed before keep them but no longer move the watermark — a live one, or a failed one retried
 * later, would move it past the operator's value. Returns what it was, and how many runs gave up
 * moving it. In the caller's transaction, beside its audit entry.
 */
export async function setWatermark(
  db: Db,
  sourceId: string,
  to: StoredWatermark | undefined,
): Promise<{ was: StoredWatermark | undefined; demoted: number }> {
  // Be very careful: the runs' rows first, then the watermark's, the order a page's transaction
  // takes them in (its run, then the watermark): the other order could deadlock with a page.
  const demoted = await db.$queryRaw<unknown[]>`
    UPDATE fetch_run SET window_head = false
     WHERE source_id = ${sourceId} AND window_head IS TRUE
    RETURNING 1`;
  const was = await db.$queryRaw<StoredWatermark[]>`
    SELECT kind, value, to_char(business_date, 'YYYY-MM-DD') AS "businessDate"
      FROM source_watermark WHERE source_id = ${sourceId} FOR UPDATE`;
  if (to === undefined) {
    await db.$queryRaw`DELETE FROM source_watermark WHERE source_id = ${sourceId} RETURNING 1`;
  } else {
    await db.$queryRaw`
      INSERT INTO source_watermark (source_id, kind, value, business_date, fetch_run_id, updated_at)
      VALUES (${sourceId}, ${to.kind}, ${to.value}, ${to.businessDate}::date, NULL, now())
      ON CONFLICT (source_id) DO UPDATE
         SET kind = EXCLUDED.kind, value = EXCLUDED.value, business_date = EXCLUDED.business_date,
             fetch_run_id = NULL, updated_at = now()
      RETURNING 1`;
  }
  return { was: was[0], demoted: demoted.length };
}
