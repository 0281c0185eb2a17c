/**
 * The demo job, `fetch-records`: pages of records from the demo partner's records API into the
 * generic `fetched_record` table (upsert on source + partner id), one `fetch.page_stored` event per
 * page, and optionally the run's summary submitted downstream (a non-idempotent call). Written with
 * the public job API only, like any team's own job.
 */
import { defineJob } from '../../activities/job-api/index.ts';
import { fetchedRecordsReconcile, storeFetchedRecords } from '../fetched-records.ts';
import { fetchRecordsPage, type PartnerRecord } from './records-api.ts';
import { submitSummary } from './submissions-api.ts';

export { PAGE_STORED_TOPIC } from '../fetched-records.ts';

export const fetchRecordsJob = defineJob<Record<string, never>, PartnerRecord>({
  type: 'fetch-records',
  description:
    'records from a partner speaking GET /sources/:id/records (the demo partner), into fetched_record',
  recordId: (record) => record.id,
  fetchPage: fetchRecordsPage,
  storePage: (_tx, records, ctx) =>
    storeFetchedRecords(
      ctx.sql,
      records.map((r) => ({ external_id: r.id, data: r.record })),
      ctx,
    ),
  reconcile: fetchedRecordsReconcile,
  downstream: submitSummary,
});
