/**
 * The generic business table `fetched_record` (one row per source and partner id), as the built-in
 * jobs store their records (jobs/fetched-records.ts): the demo job and the declarative `http` job.
 */
import type { Prisma } from '../prisma/generated/client.ts';

/** The page a batch of records comes from, and the time its transaction writes. */
export interface FetchedPage {
  sourceId: string;
  /** The run's business date, as the `date` column takes it (UTC midnight). */
  businessDate: Date;
  fetchRunId: string;
  /** The transaction's time: a repeat of the page writes the same timestamps. */
  now: Date;
}

/**
 * Upserts `rows` (`data` as the partner sent it) on `sql`, the page's transaction: one statement
 * whose one parameter is the page's JSON, cheapest through the driver. A record already stored
 * (same source and id) takes the new data, date and run. Nothing is sent for no rows.
 */
export async function upsertFetchedRecords(
  sql: Pick<Prisma.TransactionClient, '$executeRaw'>,
  page: FetchedPage,
  rows: readonly { external_id: string; data: unknown }[],
): Promise<void> {
  if (rows.length === 0) return;
  await sql.$executeRaw`
    INSERT INTO fetched_record (source_id, external_id, business_date, fetch_run_id, data, created_at, updated_at)
    SELECT ${page.sourceId}, r.external_id, ${page.businessDate}::date, ${page.fetchRunId}::uuid, r.data, ${page.now}, ${page.now}
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(external_id text, data jsonb)
    ON CONFLICT (source_id, external_id) DO UPDATE
       SET data = EXCLUDED.data, business_date = EXCLUDED.business_date,
           fetch_run_id = EXCLUDED.fetch_run_id, updated_at = EXCLUDED.updated_at`;
}
