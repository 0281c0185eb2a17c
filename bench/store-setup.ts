/**
 * The storePage bench's runs and pages: claimed runs (one per lane, through the real claimRun
 * activity), their pages staged up front as fetchPage leaves them, so that only the stores are
 * timed. Pages of 100 records with ids unique to the run: every store inserts its rows.
 */
import type pg from 'pg';
import type { createActivities } from '../activities/index.ts';
import { pageKeyFor } from '../contract/business-key.ts';
import type { StorePageInput } from '../contract/types.ts';

export const RECORDS_PER_PAGE = 100;
const DAY_MS = 86_400_000;
let dates = 0;

/** A realistic partner record of a few hundred bytes. */
function record(runTag: string, pageNo: number, i: number) {
  return {
    id: `${runTag}-${pageNo}-${i}`,
    name: `Record ${pageNo * RECORDS_PER_PAGE + i}`,
    amount: Math.round((i * 37.5 + pageNo) * 100) / 100,
    currency: 'EUR',
    status: i % 3 === 0 ? 'settled' : 'open',
    updatedAt: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
    tags: ['bench', `page-${pageNo}`],
    address: { street: `${i} Bench Street`, city: 'Lisbon', zip: `1${String(i).padStart(3, '0')}-000` },
  };
}

/** The sources of `lanes` lanes (one run each at a time), created once. */
export async function createLaneSources(pool: pg.Pool, lanes: number): Promise<string[]> {
  const ids = Array.from({ length: lanes }, (_, i) => `bench-store-${i}`);
  for (const id of ids) {
    await pool.query(
      `INSERT INTO source (id, name, base_url, timezone, page_size, job_type, updated_at)
       VALUES ($1, $1, 'http://127.0.0.1:9', 'UTC', ${RECORDS_PER_PAGE}, 'fetch-records', now())`,
      [id],
    );
  }
  return ids;
}

/**
 * Claims a fresh run of each source (a business date never used before) and stages `pages` pages
 * of each; returns every lane's storePage inputs in page order.
 */
export async function prepareLanes(
  acts: ReturnType<typeof createActivities>,
  pool: pg.Pool,
  sources: readonly string[],
  pages: number,
): Promise<StorePageInput[][]> {
  const businessDate = new Date(Date.UTC(2030, 0, 1) + dates++ * DAY_MS).toISOString().slice(0, 10);
  const lanes: StorePageInput[][] = [];
  for (const sourceId of sources) {
    const claim = await acts.claimRun({
      sourceId,
      businessDate,
      workflowId: `fetch/fetch-records/${sourceId}/${businessDate}`,
      workflowRunId: 'bench',
      correlationId: 'bench',
      requestedBy: 'cli',
      scheduledAt: `${businessDate}T02:00:00Z`,
    });
    if (claim.outcome !== 'claimed') throw new Error(`bench run not claimed: ${claim.outcome}`);
    const inputs: StorePageInput[] = [];
    for (let pageNo = 0; pageNo < pages; pageNo++) {
      const nextCursor = pageNo + 1 < pages ? `c${pageNo + 1}` : null;
      const recs = Array.from({ length: RECORDS_PER_PAGE }, (_, i) =>
        record(`${businessDate}-${sourceId}`, pageNo, i),
      );
      const key = pageKeyFor({ jobType: 'fetch-records', sourceId, businessDate }, pageNo);
      await pool.query(
        `INSERT INTO fetched_page (key, start_cursor, cursor, complete, record_count, records, updated_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, now(), now() + interval '1 hour')`,
        [
          key,
          pageNo === 0 ? null : `c${pageNo}`,
          nextCursor,
          nextCursor === null,
          recs.length,
          JSON.stringify(recs),
        ],
      );
      inputs.push({
        jobType: 'fetch-records',
        fetchRunId: claim.fetchRunId,
        leaseToken: claim.leaseToken,
        sourceId,
        businessDate,
        pageNo,
        recordCount: recs.length,
        nextCursor,
      });
    }
    lanes.push(inputs);
  }
  return lanes;
}
