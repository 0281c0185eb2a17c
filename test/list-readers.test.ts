// The read-only listings (`listRuns`, `listDeadLetters`) are one SQL statement each, run through
// Prisma for library callers and through one plain node-postgres connection for the CLI. Both
// must return exactly the rows Prisma's `findMany` returned before: same fields, Dates, numbers,
// parsed JSON, and a DATE column at UTC midnight whatever the process's time zone.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { view } from '../client/dead-letters/view.ts';
import { type ListDeadLettersFilter, listDeadLetters } from '../client/dead-letters/list.ts';
import { openPgReader } from '../db/pg-reader.ts';
import { type ListRunsFilter, listRuns } from '../client/runs.ts';
import { readerOf, type SqlConnection } from '../db/sql-reader.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { insertDeadLetter, insertRun } from './helpers/job-rows.ts';
import { engineConnection } from '../db/pool-config.ts';

/** East of UTC by 14 hours: a local-time reading of a date lands on the previous UTC day. */
const FAR_EAST = 'Pacific/Kiritimati';

let db: TestDatabase;
let reader: SqlConnection;
/** When the second batch of letters was written: the `since` filter's edge. */
let midpoint: Date;

before(async () => {
  db = await useTestDatabase();
  reader = openPgReader(db.url);
  for (const id of ['alpha', 'beta']) await createSource(db.prisma, id, 'http://127.0.0.1:1');
  const rows = [
    { jobType: 'fetch-records', sourceId: 'alpha', date: '2026-03-01', status: 'succeeded' as const },
    { jobType: 'fetch-records', sourceId: 'alpha', date: '2026-03-02', status: 'running' as const },
    { jobType: 'exchange-rates', sourceId: 'alpha', date: '2026-03-02', status: 'retry_wait' as const },
    { jobType: 'fetch-records', sourceId: 'beta', date: '2026-02-28', status: 'queued' as const },
  ];
  for (const row of rows) await insertRun(db.prisma, row);
  // Every nullable column set on one run, so each column's type is compared with a value.
  await db.prisma.fetchRun.updateMany({
    where: { status: 'retry_wait' },
    data: {
      startedAt: new Date('2026-03-02T03:00:00.123Z'),
      nextRunAt: new Date('2026-03-02T03:05:00Z'),
      leaseToken: '6f1c1a8e-8d53-4c5e-9d0b-3a1f0b7f2a11',
      leaseUntil: new Date('2026-03-02T03:10:00Z'),
      errorClass: 'UpstreamUnavailable',
      errorMessage: 'partner: 503',
      workflowRunId: 'run-1',
      pagesStored: 3,
      recordsStored: 300,
      cursor: 'c3',
      finishedAt: new Date('2026-03-02T04:00:00Z'),
    },
  });
  await insertDeadLetter(db.prisma, { jobType: 'fetch-records', sourceId: 'beta', date: '2026-02-20' });
  const closed = await insertDeadLetter(db.prisma, {
    jobType: 'exchange-rates',
    sourceId: 'alpha',
    date: '2026-02-21',
  });
  await db.prisma.deadLetter.update({
    where: { id: closed.letter.id },
    data: {
      status: 'discarded',
      closedAt: new Date(),
      closedBy: 'ops',
      closeReason: 'known',
      replayId: 'r1',
    },
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  midpoint = new Date();
  await insertDeadLetter(db.prisma, { jobType: 'fetch-records', sourceId: 'alpha', date: '2026-02-22' });
});

after(async () => {
  await reader?.close();
  await db?.drop();
});

/** What `listRuns` returned before it was SQL: Prisma's findMany for the same filter. */
function findRuns(f: ListRunsFilter) {
  return db.prisma.fetchRun.findMany({
    where: { jobType: f.jobType, sourceId: f.sourceId, status: f.status },
    orderBy: [{ businessDate: 'desc' }, { createdAt: 'desc' }],
    take: Math.min(Math.max(f.limit ?? 50, 1), 1000),
  });
}

/** What `listDeadLetters` returned before it was SQL. */
async function findLetters(f: ListDeadLettersFilter) {
  const status = f.status ?? 'open';
  const rows = await db.prisma.deadLetter.findMany({
    where: {
      ...(status === 'all' ? {} : { status }),
      ...(f.jobType === undefined ? {} : { jobType: f.jobType }),
      ...(f.sourceId === undefined ? {} : { sourceId: f.sourceId }),
      ...(f.errorType === undefined ? {} : { errorType: f.errorType }),
      ...(f.since === undefined ? {} : { createdAt: { gte: f.since } }),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    take: Math.min(Math.max(f.limit ?? 50, 1), 1000),
  });
  return rows.map(view);
}

/** Runs `check` with the process's time zone set to `zone` (Node re-reads TZ when it is assigned). */
async function inTimeZone(zone: string, check: () => Promise<void>): Promise<void> {
  const before = process.env.TZ;
  process.env.TZ = zone;
  try {
    assert.notEqual(new Date(2026, 2, 1).getTimezoneOffset(), 0, `${zone} is not UTC here`);
    await check();
  } finally {
    if (before === undefined) delete process.env.TZ;
    else process.env.TZ = before;
  }
}

const RUN_FILTERS: ListRunsFilter[] = [
  {},
  { jobType: 'fetch-records' },
  { sourceId: 'alpha' },
  { status: 'retry_wait' },
  { jobType: 'fetch-records', sourceId: 'alpha', status: 'running' },
  { sourceId: 'nobody' },
  { limit: 2 },
  { limit: 0 },
];

void describe('list readers: the listings read the rows Prisma returned', () => {
  void it('list readers: listRuns through pg and through Prisma equals findMany, for every filter', async () => {
    for (const filter of RUN_FILTERS) {
      const expected = await findRuns(filter);
      const label = JSON.stringify(filter);
      assert.deepStrictEqual(await listRuns({ sql: reader }, filter), expected, `pg ${label}`);
      assert.deepStrictEqual(await listRuns({ prisma: db.prisma }, filter), expected, `prisma ${label}`);
    }
    // Four runs, and the three runs of the dead letters.
    assert.equal((await findRuns({})).length, 7, 'the filters are compared on real rows');
  });

  void it('list readers: listDeadLetters through pg and through Prisma equals findMany', async () => {
    const filters: ListDeadLettersFilter[] = [
      {},
      { status: 'all' },
      { status: 'discarded' },
      { jobType: 'fetch-records', sourceId: 'alpha' },
      { errorType: 'InvalidInput', status: 'all' },
      { errorType: 'Timeout' },
      { since: midpoint, status: 'all' },
      { limit: 1, status: 'all' },
    ];
    for (const filter of filters) {
      const expected = await findLetters(filter);
      const label = JSON.stringify(filter);
      assert.deepStrictEqual(await listDeadLetters({ sql: reader }, filter), expected, `pg ${label}`);
      assert.deepStrictEqual(
        await listDeadLetters({ prisma: db.prisma }, filter),
        expected,
        `prisma ${label}`,
      );
    }
    assert.equal((await findLetters({ since: midpoint, status: 'all' })).length, 1, 'since cuts');
    assert.equal((await findLetters({ status: 'all' })).length, 3);
  });

  void it('list readers: in a time zone east of UTC the pg reader keeps dates at UTC midnight', async () => {
    await inTimeZone(FAR_EAST, async () => {
      const runs = await listRuns({ sql: reader }, { status: 'retry_wait' });
      assert.equal(runs[0]?.businessDate.toISOString(), '2026-03-02T00:00:00.000Z');
      assert.deepStrictEqual(runs, await findRuns({ status: 'retry_wait' }));
      const letters = await listDeadLetters({ sql: reader }, { status: 'all' });
      assert.deepStrictEqual(letters, await findLetters({ status: 'all' }));
      assert.deepEqual(
        letters.map((l) => l.businessDate),
        ['2026-02-22', '2026-02-21', '2026-02-20'],
      );

      // node-postgres's own parser, which the reader replaces on its connection only, would not.
      const plain = new pg.Client(engineConnection(db.url));
      await plain.connect();
      try {
        const { rows } = await plain.query<{ d: Date }>(
          "SELECT business_date AS d FROM fetch_run WHERE status = 'retry_wait'",
        );
        assert.notEqual(rows[0]?.d.toISOString(), '2026-03-02T00:00:00.000Z');
      } finally {
        await plain.end();
      }
    });
  });

  void it('list readers: each column type reads as through Prisma, bigint and timestamp included', async () => {
    const sql = `SELECT 9007199254740993::int8 AS big, 7::int4 AS small, 2.5::float8 AS ratio,
      '2026-03-01'::date AS day, '2026-03-01 02:03:04.5'::timestamp AS at,
      '2026-03-01 02:03:04.5+05'::timestamptz AS "atZone", '{"a":[1]}'::jsonb AS doc,
      'open'::dead_letter_status AS status, NULL::text AS nothing`;
    await inTimeZone(FAR_EAST, async () => {
      const [row] = await reader.query<Record<string, unknown>>(sql, []);
      assert.deepStrictEqual(row, (await readerOf({ prisma: db.prisma }).query(sql, []))[0]);
      assert.equal(row?.big, 9007199254740993n);
      assert.deepEqual(row?.at, new Date('2026-03-01T02:03:04.500Z'));
    });
  });
});
