// Crash points (R12a) end to end: `durable-fetch worker` runs as a real child process that kills
// itself with SIGKILL at one named point of a run; a fresh worker then finishes the run. Whatever
// the point, PostgreSQL must hold each business row, outbox event and idempotency record once, and
// every repeat request the partner saw must carry the same Idempotency-Key as the first.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { WORKER_CRASH_POINTS, type WorkerCrashPoint } from '../runtime/crash-points.ts';
import { startFetch } from '../client/start-fetch.ts';
import { encodeCursor, makeRecord } from '../partner/records.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { pageKeyFor } from '../contract/business-key.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { spawnTs, type Spawned, within } from './helpers/process.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const RECORDS = 230;
const PAGE_SIZE = 100; // stored pages of 100 + 100 + 30 records …
const PAGES = 3;
const PARTNER_PAGE_LIMIT = 50; // … each fetched in partner requests of 50: 2 + 2 + 1 requests

/** Where the run is when worker A dies, and what the partner sees over the whole run. */
interface Expected {
  date: string;
  atCrash: { status: string; pagesStored: number; records: number; stagedPages: number };
  /** Cursors the partner is asked for twice: the request whose answer died with worker A. */
  repeatedCursors: (string | null)[];
}

// A Record over WorkerCrashPoint: a new crash point does not compile until it has a scenario here.
const SCENARIOS: Record<WorkerCrashPoint, Expected> = {
  // Nothing staged yet: the retried fetchPage asks the partner for the first page again.
  'after-fetch': {
    date: '2026-07-01',
    atCrash: { status: 'running', pagesStored: 0, records: 0, stagedPages: 0 },
    repeatedCursors: [null],
  },
  // The store transaction rolls back; the retry stores the still-staged page, no new request.
  'before-commit': {
    date: '2026-07-02',
    atCrash: { status: 'running', pagesStored: 0, records: 0, stagedPages: 1 },
    repeatedCursors: [],
  },
  // Page 0 is committed; the retried storePage finds its idempotency record and writes nothing.
  'after-commit': {
    date: '2026-07-03',
    atCrash: { status: 'running', pagesStored: 1, records: 100, stagedPages: 0 },
    repeatedCursors: [],
  },
  // The run is committed as succeeded; the retried completeRun returns the same outcome.
  'after-complete': {
    date: '2026-07-04',
    atCrash: { status: 'succeeded', pagesStored: PAGES, records: RECORDS, stagedPages: 0 },
    repeatedCursors: [],
  },
};

let client: Client;

before(async () => {
  client = await testClient();
});
after(async () => {
  await client?.connection.close();
});

/** A `durable-fetch worker` process; `ended` tells its exit code or the signal that killed it. */
function spawnWorker(env: Record<string, string>): Spawned {
  return spawnTs(['bin/durable-fetch.js', 'worker'], env);
}

async function runState(db: TestDatabase, sourceId: string) {
  const [runs, records, stagedPages] = await Promise.all([
    db.prisma.fetchRun.findMany({ where: { sourceId } }),
    db.prisma.fetchedRecord.count({ where: { sourceId } }),
    db.prisma.fetchedPage.count(),
  ]);
  return { runs, records, stagedPages };
}

/** PostgreSQL after recovery: one succeeded run, each record, event and idempotency key once. */
async function assertStoredOnce(db: TestDatabase, sourceId: string, date: string, fetchRunId: string) {
  const done = await runState(db, sourceId);
  assert.equal(done.runs.length, 1);
  const run = done.runs[0];
  assert.equal(run?.id, fetchRunId);
  assert.equal(run?.status, 'succeeded');
  assert.equal(run?.recordsStored, RECORDS);
  assert.equal(run?.pagesStored, PAGES);
  assert.equal(done.stagedPages, 0, 'no staged page left behind');
  const stored = await db.prisma.fetchedRecord.findMany({
    where: { sourceId },
    select: { externalId: true },
  });
  const partnerIds = Array.from({ length: RECORDS }, (_, i) => makeRecord(sourceId, date, i + 1).id).sort();
  assert.deepEqual(stored.map((r) => r.externalId).sort(), partnerIds);

  // One outbox event per page and one for the run; each record announced exactly once.
  const events = await db.prisma.outboxEvent.findMany({ where: { aggregateId: fetchRunId } });
  const pages = events
    .filter((e) => e.topic === 'fetch.page_stored')
    .map((e) => e.payload as { pageNo: number; externalIds: string[] });
  assert.deepEqual(
    pages.map((p) => p.pageNo).sort((a, b) => a - b),
    [0, 1, 2],
  );
  assert.equal(events.filter((e) => e.topic === 'fetch.run_completed').length, 1);
  assert.equal(events.length, PAGES + 1);
  assert.deepEqual(pages.flatMap((p) => p.externalIds).sort(), partnerIds);

  // One idempotency record per page key, and nothing else.
  const keys = Array.from({ length: PAGES }, (_, n) =>
    pageKeyFor({ jobType: 'fetch-records', sourceId: sourceId, businessDate: date }, n),
  );
  const idempotency = await db.prisma.idempotencyRecord.findMany({ select: { key: true } });
  assert.deepEqual(idempotency.map((r) => r.key).sort(), keys);
}

/**
 * The partner's ledger: each request carried the key of the page its cursor belongs to, only
 * `repeatedCursors` were asked for twice, and a repeat carried the same key as the first request.
 */
function assertPartnerSawOneKeyPerPage(
  partner: PartnerServer,
  sourceId: string,
  date: string,
  repeatedCursors: (string | null)[],
) {
  // Partner requests start at records 1, 51, 101, …; stored page n holds records n*100+1 … n*100+100.
  const expectedKey = new Map<string | null, string>();
  for (let seq = 1; seq <= RECORDS; seq += PARTNER_PAGE_LIMIT) {
    const cursor = seq === 1 ? null : encodeCursor(seq);
    expectedKey.set(
      cursor,
      pageKeyFor(
        { jobType: 'fetch-records', sourceId: sourceId, businessDate: date },
        Math.floor((seq - 1) / PAGE_SIZE),
      ),
    );
  }
  const ledger = partner.ledger.entries({ sourceId, date });
  assert.equal(ledger.length, expectedKey.size + repeatedCursors.length);
  const sentByCursor = new Map<string | null, (string | undefined)[]>();
  for (const entry of ledger) {
    const cursor = entry.cursor ?? null;
    assert.equal(entry.status, 200);
    assert.equal(entry.idempotencyKey, expectedKey.get(cursor), `Idempotency-Key for cursor ${cursor}`);
    sentByCursor.set(cursor, [...(sentByCursor.get(cursor) ?? []), entry.idempotencyKey]);
  }
  assert.deepEqual([...sentByCursor.keys()].sort(), [...expectedKey.keys()].sort());
  const repeated = [...sentByCursor].filter(([, sent]) => sent.length > 1);
  assert.deepEqual(
    repeated.map(([cursor]) => cursor),
    repeatedCursors,
  );
  for (const [cursor, [first, ...repeats]] of repeated) {
    for (const key of repeats) assert.equal(key, first, `cursor ${cursor} repeated with another key`);
  }
}

/**
 * One scenario: worker A with `point` armed dies mid-run, worker B finishes it; then the
 * invariants in PostgreSQL and at the partner. Returns how long the recovery took (A's death to
 * the run's result), for the test's diagnostics.
 */
async function crashAndRecover(point: WorkerCrashPoint): Promise<number> {
  const { date, atCrash, repeatedCursors } = SCENARIOS[point];
  const sourceId = `crash-${point}`;
  const db = await useTestDatabase();
  let partner: PartnerServer | undefined;
  const workers: Spawned[] = [];
  const taskQueue = `test-crash-${point}-${randomUUID()}`;
  const startWorker = (crash?: WorkerCrashPoint) => {
    const worker = spawnWorker({
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
      PARTNER_PAGE_LIMIT: String(PARTNER_PAGE_LIMIT),
      LOG_LEVEL: 'warn',
      ...(crash ? { DURABLE_FETCH_CRASH_POINT: crash } : {}),
    });
    workers.push(worker);
    return worker;
  };
  try {
    partner = await startPartner({ port: 0, recordCount: () => RECORDS });
    await createSource(db.prisma, sourceId, partner.url, { pageSize: PAGE_SIZE });
    // The quick preset's 10 s heartbeat timeout notices a dead fetchPage (the default waits 30 s).
    await db.prisma.source.update({ where: { id: sourceId }, data: { retryPolicy: 'partnerHttpQuick' } });

    const workerA = startWorker(point);
    await workerA.waitFor(/worker polling task queue/, 60_000);
    const started = await startFetch(
      { temporal: client, prisma: db.prisma, taskQueue, now: () => new Date('2026-11-29T12:00:00Z') },
      { sourceId, date, requestedBy: 'test' },
    );

    const exit = await within(workerA.ended, 60_000, () => `worker A to die:\n${workerA.output()}`);
    const diedAt = Date.now();
    assert.deepEqual(exit, { code: null, signal: 'SIGKILL' }, workerA.output());
    assert.match(workerA.output(), new RegExp(`crash point ${point}: SIGKILL`));
    // The point is where it claims to be: what had reached PostgreSQL when the process died.
    const dead = await runState(db, sourceId);
    assert.equal(dead.runs.length, 1);
    assert.deepEqual(
      {
        status: dead.runs[0]?.status,
        pagesStored: dead.runs[0]?.pagesStored,
        records: dead.records,
        stagedPages: dead.stagedPages,
      },
      atCrash,
    );

    const workerB = startWorker();
    await workerB.waitFor(/worker polling task queue/, 60_000);
    const result = await within(
      started.handle.result(),
      90_000,
      () => `the run's result:\n${workerB.output()}`,
    );
    const recoveryMs = Date.now() - diedAt;
    assert.deepEqual(result, {
      status: 'succeeded',
      fetchRunId: result.fetchRunId,
      pages: PAGES,
      records: RECORDS,
    });
    assert.equal(await workerB.stop('SIGTERM', 30_000), 0, workerB.output());

    await assertStoredOnce(db, sourceId, date, result.fetchRunId);
    assertPartnerSawOneKeyPerPage(partner, sourceId, date, repeatedCursors);
    return recoveryMs;
  } finally {
    for (const worker of workers) await worker.stop('SIGKILL', 5_000);
    await partner?.close();
    await db.drop();
  }
}

// Each scenario has its own database, partner and task queue; they mostly wait out timeouts.
describe('crash points', { concurrency: true }, () => {
  for (const point of WORKER_CRASH_POINTS) {
    it(
      `crash-points: a worker killed ${point} loses and duplicates nothing`,
      { timeout: 180_000 },
      async (t) => {
        const recoveryMs = await crashAndRecover(point);
        t.diagnostic(`recovered ${(recoveryMs / 1000).toFixed(1)} s after the crash`);
      },
    );
  }
});
