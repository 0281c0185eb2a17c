/**
 * The storePage bench's baseline: the statements the storePage activity sends (the same SQL, in
 * one transaction, on the same data), through a plain `pg` pool with no ORM in between. The SQL
 * is the activity's own (db/pages/page-store.ts, the demo job's upsert), built by Prisma.sql and sent
 * by `pg` (db/transaction.ts `driverSql`, which the activity uses for the engine's statements) —
 * prepared once per connection, as the Prisma client's adapter prepares them, when given a namer
 * (db/statement-names.ts); the control flow mirrors activities/pages/store-page.ts by hand. The job's
 * upsert, which the activity sends through Prisma's transaction client, goes through `pg` here.
 */
import pg from 'pg';
import type { JobRegistry } from '../activities/job-api/registry.ts';
import { byRecordId, jobOf } from '../activities/job-runtime.ts';
import { pageCommitOf } from '../activities/pages/store-page.ts';
import { commitPage, lockRunWithSource, takeStagedPage } from '../db/pages/page-store.ts';
import { driverSql } from '../db/transaction.ts';
import type { Prisma } from '../prisma/generated/client.ts';
import { pageKeyFor } from '../contract/business-key.ts';
import type { StorePageInput } from '../contract/types.ts';

/** Names a statement by its text (db/statement-names.ts `statementNamer`). */
type StatementNamer = (query: { sql: string }) => string;

/** A pool whose clients count the statements they send (BEGIN and COMMIT included). */
export interface CountingPool {
  pool: pg.Pool;
  /** Statements sent so far. */
  statements: () => number;
  /** The start of every statement's text from now on, until `stop` is called. */
  record: () => { stop: () => string[] };
}

/** A pool whose clients count the statements they send (BEGIN and COMMIT included). */
export function countingPool(config: pg.PoolConfig): CountingPool {
  const pool = new pg.Pool(config);
  // pg-pool's end() resolves before its idle clients' sockets have closed, so the database's drop
  // at teardown can terminate one of them after it: an idle client's error must not crash the
  // bench (a client in use fails its own query, which the bench does report).
  pool.on('error', () => undefined);
  let n = 0;
  let texts: string[] | undefined;
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      n++;
      const q = args[0] as string | { text?: string };
      texts?.push((typeof q === 'string' ? q : (q.text ?? '')).replace(/\s+/g, ' ').trim().slice(0, 140));
      return query(...args);
    };
  });
  return {
    pool,
    statements: () => n,
    record: () => {
      const got: string[] = [];
      texts = got;
      return {
        stop: () => {
          texts = undefined;
          return got;
        },
      };
    },
  };
}

/**
 * One page stored as storePage stores it — the same statements from db/pages/page-store.ts and the demo
 * job's upsert, the same checks and the same JSON work (the commit built by the activity's
 * `pageCommitOf`) — through `pool`. Bench pages are stored once, so the replay and refusal
 * branches are not taken; any refusal throws.
 */
export async function baselineStorePage(
  pool: pg.Pool,
  jobs: JobRegistry,
  input: StorePageInput,
  opts: { leaseTtlMs: number; retentionMs: number; statementName?: StatementNamer },
): Promise<string | null> {
  const key = pageKeyFor({ jobType: 'fetch-records', ...input }, input.pageNo);
  const now = new Date();
  const client = await pool.connect();
  const tx = driverSql(client, { name: opts.statementName });
  try {
    await client.query('BEGIN');
    const locked = await lockRunWithSource(tx, input, input.sourceId);
    if (!locked?.held) throw new Error('lease lost');
    const { job, view } = jobOf({ jobs }, locked.source);
    const { staged, prior } = await takeStagedPage(tx, key, input.sourceId);
    if (prior || !staged) throw new Error('bench pages are stored once');
    if (staged.recordCount !== input.recordCount || staged.cursor !== input.nextCursor) {
      throw new Error('staged page mismatch');
    }
    const records = byRecordId(job, staged.records, 'baseline');
    const ctx = { source: view, ...input, now, sql: tx };
    // The demo job writes through `ctx.sql` only.
    const page = await job.storePage(tx as Prisma.TransactionClient, records, ctx);
    const { result, commit } = pageCommitOf(input, {
      key,
      stagedRecords: staged.records,
      events: page.events,
      recordCount: page.recordCount ?? records.length,
      now,
      retentionMs: opts.retentionMs,
      leaseTtlMs: opts.leaseTtlMs,
      workflowRunId: undefined,
    });
    const committed = await commitPage(tx, commit);
    if (!committed.advanced) throw new Error('lease lost');
    await client.query('COMMIT');
    return result.eventId;
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}
