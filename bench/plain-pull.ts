/**
 * The fetch bench's baseline for a bulk pull: the script a user would write instead of a
 * durable-fetch run — fetch each partner page and, in one transaction per page, upsert its records
 * and insert one outbox row listing them, with plain `pg`. It asks the same partner for the same
 * number of records a request as a run does (`PARTNER_PAGE_LIMIT`), writes the same table with the
 * same upsert (db/fetched-records.ts's, so same indexes, same JSON work in PostgreSQL) and the same
 * outbox table, and keeps nothing else: no lease, no idempotency record, no staging, no retry, no
 * workflow. What it does not do is what a run adds to survive crashes; the ratio is that price.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';

export interface PlainPull {
  pool: pg.Pool;
  partnerUrl: string;
  sourceId: string;
  date: string;
  /** Records per partner request (the worker's `PARTNER_PAGE_LIMIT`). */
  limit: number;
  /** A `fetch_run` row the records name (the table's foreign key): the script's one bookkeeping row. */
  fetchRunId: string;
}

/** Pulls every record of (sourceId, date); returns how many were stored. */
export async function plainPull(p: PlainPull): Promise<number> {
  let cursor: string | null = null;
  let stored = 0;
  do {
    const url = new URL(`/sources/${encodeURIComponent(p.sourceId)}/records`, p.partnerUrl);
    url.searchParams.set('date', p.date);
    url.searchParams.set('limit', String(p.limit));
    if (cursor !== null) url.searchParams.set('cursor', cursor);
    const res = await fetch(url);
    if (!res.ok) throw new Error(`partner answered ${res.status}`);
    const body = (await res.json()) as { records: { id: string }[]; nextCursor: string | null };
    const rows = body.records.map((r) => ({ external_id: r.id, data: r }));
    const now = new Date();
    const client = await p.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO fetched_record (source_id, external_id, business_date, fetch_run_id, data, created_at, updated_at)
         SELECT $1, r.external_id, $2::date, $3::uuid, r.data, $4, $4
           FROM jsonb_to_recordset($5::jsonb) AS r(external_id text, data jsonb)
         ON CONFLICT (source_id, external_id) DO UPDATE
            SET data = EXCLUDED.data, business_date = EXCLUDED.business_date,
                fetch_run_id = EXCLUDED.fetch_run_id, updated_at = EXCLUDED.updated_at`,
        [p.sourceId, p.date, p.fetchRunId, now, JSON.stringify(rows)],
      );
      await client.query(
        `INSERT INTO outbox_event (id, topic, aggregate_type, aggregate_id, payload, created_at, available_at)
         VALUES ($1, 'fetch.page_stored', 'fetch_run', $2, $3::jsonb, $4, $4)`,
        [
          randomUUID(),
          p.fetchRunId,
          JSON.stringify({ sourceId: p.sourceId, externalIds: rows.map((r) => r.external_id) }),
          now,
        ],
      );
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    } finally {
      client.release();
    }
    stored += rows.length;
    cursor = body.nextCursor;
  } while (cursor !== null);
  return stored;
}
