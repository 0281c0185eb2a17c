/**
 * The demo job, `fetch-records`: pages of records from the demo partner's records API into the
 * generic `fetched_record` table (upsert on source + partner id), one `fetch.page_stored` event per
 * page, and optionally the run's summary submitted downstream (a non-idempotent call). Written with
 * the public job API only, like any team's own job.
 */
import { defineJob } from '../../activities/job-api/index.ts';
import { fetchRecordsPage, type PartnerRecord } from './records-api.ts';
import { submitSummary } from './submissions-api.ts';

/** Topic of the event each stored page emits. */
export const PAGE_STORED_TOPIC = 'fetch.page_stored';

export const fetchRecordsJob = defineJob<Record<string, never>, PartnerRecord>({
  type: 'fetch-records',
  description:
    'records from a partner speaking GET /sources/:id/records (the demo partner), into fetched_record',
  recordId: (record) => record.id,
  fetchPage: fetchRecordsPage,

  async storePage(tx, records, ctx) {
    const date = new Date(`${ctx.businessDate}T00:00:00Z`);
    const rows = records.map((r) => ({ external_id: r.id, data: r.record }));
    if (rows.length > 0) {
      await tx.$executeRaw`
        INSERT INTO fetched_record (source_id, external_id, business_date, fetch_run_id, data, created_at, updated_at)
        SELECT ${ctx.source.id}, r.external_id, ${date}::date, ${ctx.fetchRunId}::uuid, r.data, ${ctx.now}, ${ctx.now}
          FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(external_id text, data jsonb)
        ON CONFLICT (source_id, external_id) DO UPDATE
           SET data = EXCLUDED.data, business_date = EXCLUDED.business_date,
               fetch_run_id = EXCLUDED.fetch_run_id, updated_at = EXCLUDED.updated_at`;
    }
    const payload = {
      fetchRunId: ctx.fetchRunId,
      sourceId: ctx.source.id,
      businessDate: ctx.businessDate,
      pageNo: ctx.pageNo,
      recordCount: rows.length,
      externalIds: rows.map((r) => r.external_id),
    };
    return { events: [{ topic: PAGE_STORED_TOPIC, payload }] };
  },

  reconcile: {
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
  },

  downstream: submitSummary,
});
