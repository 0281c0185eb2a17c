// Crash points (R12a) for the job plug-ins, downstream action included: a real `durable-fetch
// worker` process (which registers jobs/index.ts) SIGKILLs itself at one named point of a run of
// one job; a restarted worker finishes the run. Whatever the job and the point, the job's business
// table holds one row per natural key, each outbox event key is used once, and the partner holds
// one effect per reference.
//
// Scenarios: exchange-rates at every crash point, and the demo job at the downstream one with its
// rows and events checked too. The demo job's page points are killed in test/crash-points.test.ts
// (which checks the partner's Idempotency-Keys as well): every worker spawn costs ~25 s of CPU on a
// small CI box, so this file does not spawn for them again.
//
// The restarted worker runs in this test process (the same buildWorker as the process, on the dead
// worker's task queue): one process spawn per scenario instead of two.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { DOWNSTREAM_CRASH_POINTS, WORKER_CRASH_POINTS } from '../runtime/crash-points.ts';
import { RUN_COMPLETED_TOPIC } from '../activities/outbox.ts';
import { startFetch } from '../client/start-fetch.ts';
import { RATES_STORED_TOPIC } from '../jobs/exchange-rates.ts';
import { PAGE_STORED_TOPIC } from '../jobs/fetch-records/index.ts';
import { makeRecord } from '../partner/records.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { pageKeyFor } from '../contract/business-key.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { spawnWorker, type Spawned, within } from './helpers/process.ts';
import { temporalAddress, testClient, testWorker } from './helpers/temporal.ts';

const SECRET_REF = 'DF_SECRET_CPJ';
const RATES_TOKEN = 'tok-cpj';
const PAGE_SIZE = 25;
const PAGES = 3; // fetch-records: 25 + 25 + 10 records; exchange-rates: 25 + 25 + 6 pairs
const RECORDS = 60;
const PAIRS = 56;
const DATE = '2026-08-03';

// A Record over Point: a new crash point does not compile until its state at the crash is here.
type Point = (typeof WORKER_CRASH_POINTS)[number] | (typeof DOWNSTREAM_CRASH_POINTS)[number];
const POINTS: readonly Point[] = [...WORKER_CRASH_POINTS, ...DOWNSTREAM_CRASH_POINTS];

/** What had reached PostgreSQL and the partner when the process died. */
const AT_CRASH: Record<Point, { status: string; pagesStored: number; effects: number }> = {
  'after-fetch': { status: 'running', pagesStored: 0, effects: 0 },
  'before-commit': { status: 'running', pagesStored: 0, effects: 0 },
  'after-commit': { status: 'running', pagesStored: 1, effects: 0 },
  // The downstream action comes before completeRun: its effect exists when completeRun dies.
  'after-complete': { status: 'succeeded', pagesStored: PAGES, effects: 1 },
  'after-submit': { status: 'running', pagesStored: PAGES, effects: 1 },
};

/** A job under test: its source, its natural keys and its partner-side effects. */
interface JobCase {
  type: string;
  records: number;
  pageTopic: string;
  addSource(db: TestDatabase, sourceId: string): Promise<void>;
  /** The run's business rows' natural keys, one string per row (duplicates kept). */
  naturalKeys(db: TestDatabase, sourceId: string): Promise<string[]>;
  /** The natural keys the partner serves for the date. */
  partnerKeys(sourceId: string): string[];
  /** Effects at the partner under `reference`: made and undone. */
  effects(reference: string): { made: number; undone: number; live: number };
  /** Every reference the partner holds effects under that names `sourceId`. */
  references(sourceId: string): string[];
}

let client: Client;
let partner: PartnerServer;

const CURRENCIES = ['EUR', 'USD', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD', 'SEK'];

const FETCH_RECORDS: JobCase = {
  type: 'fetch-records',
  records: RECORDS,
  pageTopic: PAGE_STORED_TOPIC,
  addSource: (db, sourceId) =>
    createSource(db.prisma, sourceId, partner.url, {
      pageSize: PAGE_SIZE,
      submitSummary: true,
      retryPolicy: 'partnerHttpQuick',
    }),
  async naturalKeys(db, sourceId) {
    const rows = await db.prisma.fetchedRecord.findMany({
      where: { sourceId },
      select: { externalId: true },
    });
    return rows.map((r) => r.externalId);
  },
  partnerKeys: (sourceId) => Array.from({ length: RECORDS }, (_, i) => makeRecord(sourceId, DATE, i + 1).id),
  effects(reference) {
    const made = partner.ledger.entries({ action: 'submit', reference }).filter((e) => e.effect).length;
    const undone = partner.ledger.entries({ action: 'void', reference }).filter((e) => e.effect).length;
    return { made, undone, live: partner.submissions.live(reference).length };
  },
  references: (sourceId) =>
    [...new Set(partner.submissions.list().map((s) => s.reference))].filter((r) => r.includes(sourceId)),
};

const EXCHANGE_RATES: JobCase = {
  type: 'exchange-rates',
  records: PAIRS,
  pageTopic: RATES_STORED_TOPIC,
  addSource: (db, sourceId) =>
    createSource(db.prisma, sourceId, partner.url, {
      jobType: 'exchange-rates',
      config: { account: 'fx:crash' },
      credentialsRef: SECRET_REF,
      pageSize: PAGE_SIZE,
      submitSummary: true,
      retryPolicy: 'partnerHttpQuick',
    }),
  async naturalKeys(db, sourceId) {
    const rows = await db.prisma.exchangeRate.findMany({
      where: { sourceId, rateDate: new Date(`${DATE}T00:00:00Z`) },
      select: { base: true, quote: true, rateDate: true },
    });
    return rows.map((r) => `${r.base}/${r.quote}/${r.rateDate.toISOString().slice(0, 10)}`);
  },
  partnerKeys: () =>
    CURRENCIES.flatMap((base) => CURRENCIES.filter((q) => q !== base).map((q) => `${base}/${q}/${DATE}`)),
  effects(reference) {
    const effects = partner.journal.effects(reference);
    const live = partner.journal.list(reference).filter((e) => e.status === 'posted').length;
    return {
      made: effects.filter((e) => e.action === 'post').length,
      undone: effects.filter((e) => e.action === 'void').length,
      live,
    };
  },
  references: (sourceId) =>
    [...new Set(partner.journal.list().map((e) => e.reference))].filter((r) => r.includes(sourceId)),
};

/**
 * Worker processes starting at once: starting one is CPU-bound (TypeScript and the workflow
 * bundle), and many at once on a 2-CPU box starve each other past any sensible timeout.
 */
const STARTING_AT_ONCE = 2;
let starting = 0;
const startWaiters: (() => void)[] = [];
async function startSlot(): Promise<() => void> {
  while (starting >= STARTING_AT_ONCE) await new Promise<void>((resolve) => startWaiters.push(resolve));
  starting++;
  return () => {
    starting--;
    startWaiters.shift()?.();
  };
}

before(async () => {
  client = await testClient();
  partner = await startPartner({ port: 0, recordCount: () => RECORDS, ratesToken: RATES_TOKEN });
});
after(async () => {
  await client?.connection.close();
  await partner?.close();
});

async function crashState(db: TestDatabase, sourceId: string) {
  const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
  return { status: run.status, pagesStored: run.pagesStored };
}

/** PostgreSQL and the partner after recovery: every fact once. */
async function assertOnce(db: TestDatabase, job: JobCase, sourceId: string, fetchRunId: string) {
  const runs = await db.prisma.fetchRun.findMany({ where: { sourceId } });
  assert.deepEqual(
    runs.map((r) => [r.id, r.status, r.pagesStored, r.recordsStored]),
    [[fetchRunId, 'succeeded', PAGES, job.records]],
  );
  assert.equal(await db.prisma.fetchedPage.count(), 0, 'no staged page left behind');

  const keys = await job.naturalKeys(db, sourceId);
  assert.equal(keys.length, job.records, 'one business row per natural key');
  assert.equal(new Set(keys).size, keys.length, 'no natural key twice');
  assert.deepEqual([...keys].sort(), job.partnerKeys(sourceId).sort());

  // One event per event key: ids are derived from (step, topic), pages by their number.
  const events = await db.prisma.outboxEvent.findMany({ where: { aggregateId: fetchRunId } });
  assert.equal(new Set(events.map((e) => e.id)).size, events.length);
  const pageNos = events
    .filter((e) => e.topic === job.pageTopic)
    .map((e) => (e.payload as { pageNo: number }).pageNo)
    .sort((a, b) => a - b);
  assert.deepEqual(pageNos, [0, 1, 2], 'one page event per page');
  assert.equal(events.filter((e) => e.topic === RUN_COMPLETED_TOPIC).length, 1);
  assert.equal(events.length, PAGES + 1);

  const pageKeys = Array.from({ length: PAGES }, (_, n) =>
    pageKeyFor({ jobType: job.type, sourceId, businessDate: DATE }, n),
  );
  const stored = await db.prisma.idempotencyRecord.findMany({ where: { key: { in: pageKeys } } });
  assert.equal(stored.length, PAGES, 'one idempotency record per page key');

  // One downstream effect per reference, recorded, and none under another reference.
  const actions = await db.prisma.downstreamAction.findMany({ where: { fetchRunId } });
  assert.equal(actions.length, 1, 'one ledger row');
  const action = actions[0];
  assert.ok(action?.partnerId, 'the effect is recorded with its partner id');
  assert.equal(action.state, 'confirmed');
  assert.deepEqual(job.effects(action.reference), { made: 1, undone: 0, live: 1 });
  assert.deepEqual(job.references(sourceId), [action.reference]);
}

/** Worker process A, armed at `point`, dies in a run of `job`; an in-process worker finishes it. */
async function crashAndRecover(job: JobCase, point: Point): Promise<void> {
  const sourceId = `cpj-${job.type}-${point}`;
  const db = await useTestDatabase();
  let worker: Spawned | undefined;
  try {
    await job.addSource(db, sourceId);
    const recovery = await testWorker(
      testDeps(db.prisma, { secret: (ref) => (ref === SECRET_REF ? RATES_TOKEN : undefined) }),
    );
    const taskQueue = recovery.taskQueue;
    const release = await startSlot();
    worker = spawnWorker({
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
      PARTNER_PAGE_LIMIT: '50',
      LOG_LEVEL: 'warn',
      DURABLE_FETCH_CRASH_POINT: point,
      [SECRET_REF]: RATES_TOKEN,
    });
    const a = worker;
    await a.waitFor(/worker polling task queue/, 120_000).finally(release);
    const started = await startFetch(
      { temporal: client, prisma: db.prisma, taskQueue, now: () => new Date('2026-11-29T12:00:00Z') },
      { sourceId, date: DATE, requestedBy: 'test' },
    );
    const exit = await within(a.ended, 90_000, () => `worker A to die:\n${a.output()}`);
    assert.deepEqual(exit, { code: null, signal: 'SIGKILL' }, a.output());
    assert.match(a.output(), new RegExp(`crash point ${point}: SIGKILL`));
    const expected = AT_CRASH[point];
    assert.deepEqual(await crashState(db, sourceId), {
      status: expected.status,
      pagesStored: expected.pagesStored,
    });
    const references = job.references(sourceId);
    assert.equal(references.length, expected.effects);
    for (const reference of references) assert.equal(job.effects(reference).made, 1);

    const result = await recovery.run(() =>
      within(started.handle.result(), 120_000, () => `the run of ${sourceId} to end`),
    );
    assert.deepEqual(result, {
      status: 'succeeded',
      fetchRunId: result.fetchRunId,
      pages: PAGES,
      records: job.records,
    });
    await assertOnce(db, job, sourceId, result.fetchRunId);
  } finally {
    await worker?.stop('SIGKILL', 5_000);
    await db.drop();
  }
}

/** Which job dies at which points (every point is someone's: see the file comment). */
const SCENARIOS: [JobCase, readonly Point[]][] = [
  [EXCHANGE_RATES, POINTS],
  [FETCH_RECORDS, ['after-submit']],
];

// Each scenario has its own database and task queue; they mostly wait out activity timeouts.
describe('crash points of every job', { concurrency: true }, () => {
  for (const [job, points] of SCENARIOS) {
    for (const point of points) {
      it(
        `crash-points-jobs: ${job.type}, a worker killed ${point}, stores and effects everything once`,
        { timeout: 300_000 },
        () => crashAndRecover(job, point),
      );
    }
  }
});
