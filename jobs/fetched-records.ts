/**
 * The generic business table `fetched_record` (one row per source and partner id, upserted), as
 * jobs whose records have no table of their own store them: the demo job and the declarative
 * `http` job. One `fetch.page_stored` event per page lists the page's ids.
 */
import { upsertFetchedRecords } from '../db/fetched-records.ts';
import type {
  RecordsReconcile,
  StoreContext,
  StoreResult,
  TransactionSql,
} from '../activities/job-api/index.ts';

/** Topic of the event each stored page emits. */
export const PAGE_STORED_TOPIC = 'fetch.page_stored';

/**
 * Upserts a page's records (`data` as the partner sent it) on `sql`, the page's transaction (pass
 * `ctx.sql`: one statement whose parameter is the page's JSON, cheapest through the driver; the
 * statement is db/fetched-records.ts's), and returns the page's event.
 */
export async function storeFetchedRecords(
  sql: Pick<TransactionSql, '$executeRaw'>,
  rows: readonly { external_id: string; data: unknown }[],
  ctx: StoreContext<unknown>,
): Promise<StoreResult> {
  const page = {
    sourceId: ctx.source.id,
    businessDate: new Date(`${ctx.businessDate}T00:00:00Z`),
    fetchRunId: ctx.fetchRunId,
    now: ctx.now,
  };
  await upsertFetchedRecords(sql, page, rows);
  const payload = {
    fetchRunId: ctx.fetchRunId,
    sourceId: ctx.source.id,
    businessDate: ctx.businessDate,
    pageNo: ctx.pageNo,
    recordCount: rows.length,
    externalIds: rows.map((r) => r.external_id),
  };
  return { events: [{ topic: PAGE_STORED_TOPIC, payload }] };
}

/** How `durable-fetch reconcile` reads back a run stored with {@link storeFetchedRecords}. */
export const fetchedRecordsReconcile: RecordsReconcile = {
  listedIds(event) {
    if (event.topic !== PAGE_STORED_TOPIC) return undefined;
    const ids = (event.payload as { externalIds?: unknown } | null)?.externalIds;
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
  },
  async existingIds(db, run, ids) {
    const rows = await db.fetchedRecord.findMany({
      where: { sourceId: run.sourceId, externalId: { in: [...ids] } },
      select: { externalId: true },
    });
    return rows.map((r) => r.externalId);
  },
  async runIds(db, run) {
    const rows = await db.fetchedRecord.findMany({
      where: { sourceId: run.sourceId, fetchRunId: run.fetchRunId },
      select: { externalId: true },
    });
    return rows.map((r) => r.externalId);
  },
};
