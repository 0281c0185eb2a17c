// Graceful shutdown of the worker (R9) with real processes: `durable-fetch worker` A gets SIGTERM
// while the partner holds a request of a run's second page. With a long enough grace time the
// activity finishes on A; with a short one it is cancelled (the partner sees the client leave) and
// Temporal retries it on worker B. Either way A exits 0, and the run loses and duplicates nothing.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import { encodeCursor, makeRecord } from '../partner/records.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { pageKeyFor } from '../contract/business-key.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { spawnTs, type Spawned, within } from './helpers/process.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const RECORDS = 300;
const PAGE_SIZE = 100; // stored pages 0, 1, 2 of 100 records …
const PAGES = 3;
const PARTNER_PAGE_LIMIT = 50; // … each fetched in two partner requests of 50
/** The first partner request of stored page 1 (the run's second page): records 101..150. */
const HELD_CURSOR = encodeCursor(PAGE_SIZE + 1);

let client: Client;

before(async () => {
  client = await testClient();
});
after(async () => {
  await client?.connection.close();
});

/** Resolves once `check()` holds; fails after `ms`, or as soon as `worker` exits. */
async function until(check: () => boolean, ms: number, worker: Spawned, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  let exited = false;
  void worker.ended.then(() => (exited = true));
  while (!check()) {
    assert.ok(!exited, `worker exited before ${what}:\n${worker.output()}`);
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}:\n${worker.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface Scenario {
  sourceId: string;
  date: string;
  graceMs: number;
  delayMs: number;
}

/** One scenario's world: its database, partner, task queue and worker processes. */
async function withWorld<T>(
  scenario: Scenario,
  fn: (w: {
    db: TestDatabase;
    partner: PartnerServer;
    startWorker: () => Spawned;
    start: () => ReturnType<typeof startFetch>;
  }) => Promise<T>,
): Promise<T> {
  const db = await useTestDatabase();
  const workers: Spawned[] = [];
  let partner: PartnerServer | undefined;
  const taskQueue = `test-graceful-${scenario.sourceId}-${randomUUID()}`;
  try {
    partner = await startPartner({ port: 0, recordCount: () => RECORDS });
    // Page fetches as activity tasks (an isolated downstream's, or `localFetch: false`): what the
    // SDK lets finish, then cancels, is an activity. A local fetch (the default) on SIGTERM:
    // local-fetch.e2e.test.ts.
    await createSource(db.prisma, scenario.sourceId, partner.url, { pageSize: PAGE_SIZE, localFetch: false });
    await db.prisma.source.update({
      where: { id: scenario.sourceId },
      data: { retryPolicy: 'partnerHttpQuick' },
    });
    // Held once: only the first request for the cursor, so a retry is answered at once.
    partner.faults.add({
      sourceId: scenario.sourceId,
      cursor: HELD_CURSOR,
      kind: 'delay',
      delayMs: scenario.delayMs,
    });
    const startWorker = () => {
      const worker = spawnTs(['bin/durable-fetch.js', 'worker'], {
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: temporalAddress(),
        DURABLE_FETCH_TASK_QUEUE: taskQueue,
        DURABLE_FETCH_SHUTDOWN_GRACE_MS: String(scenario.graceMs),
        PARTNER_PAGE_LIMIT: String(PARTNER_PAGE_LIMIT),
        // Longer than any held request: only the shutdown's cancellation may end one early.
        HTTP_RESPONSE_TIMEOUT_MS: '120000',
        LOG_LEVEL: 'warn',
      });
      workers.push(worker);
      return worker;
    };
    const start = () =>
      startFetch(
        { temporal: client, prisma: db.prisma, taskQueue, now: () => new Date('2026-11-29T12:00:00Z') },
        { sourceId: scenario.sourceId, date: scenario.date, requestedBy: 'test' },
      );
    return await fn({ db, partner, startWorker, start });
  } finally {
    for (const worker of workers) await worker.stop('SIGKILL', 5_000);
    await partner?.close();
    await db.drop();
  }
}

/**
 * Worker A runs the run until the partner holds the first request of page 1 (the fault is
 * consumed), then gets SIGTERM (with `twice`, a second one once it says it is stopping). Resolves
 * once A has exited, with its exit and how long it took after the first signal.
 */
async function sigtermWhileHeld(
  scenario: Scenario,
  w: Parameters<Parameters<typeof withWorld>[1]>[0],
  twice = false,
): Promise<{
  started: Awaited<ReturnType<typeof startFetch>>;
  workerA: Spawned;
  exit: { code: number | null; signal: NodeJS.Signals | null };
  stopMs: number;
}> {
  const workerA = w.startWorker();
  await workerA.waitFor(/worker polling task queue/, 60_000);
  const started = await w.start();
  await until(() => w.partner.faults.list().length === 0, 60_000, workerA, 'the partner to hold page 1');
  // The fault fires when the request arrives: the partner holds it from here on.
  const sentAt = Date.now();
  workerA.child.kill('SIGTERM');
  if (twice) {
    await workerA.waitFor(/worker stopping \(SIGTERM\)/, 10_000);
    workerA.child.kill('SIGTERM');
  }
  const exit = await within(
    workerA.ended,
    scenario.delayMs + 30_000,
    () => `worker A to stop after SIGTERM:\n${workerA.output()}`,
  );
  return { started, workerA, exit, stopMs: Date.now() - sentAt };
}

/** Ledger entries of the held cursor (page 1's first request), oldest first. */
function heldRequests(partner: PartnerServer, sourceId: string, date: string) {
  return partner.ledger
    .entries({ sourceId, date, cursor: HELD_CURSOR })
    .map((e) => ({ status: e.status, fault: e.fault, idempotencyKey: e.idempotencyKey }));
}

/** The run in PostgreSQL once it succeeded: each page, record and event once. */
async function assertStoredOnce(db: TestDatabase, sourceId: string, date: string, fetchRunId: string) {
  const runs = await db.prisma.fetchRun.findMany({ where: { sourceId } });
  assert.equal(runs.length, 1);
  assert.equal(runs[0]?.id, fetchRunId);
  assert.equal(runs[0]?.status, 'succeeded');
  assert.equal(runs[0]?.recordsStored, RECORDS);
  assert.equal(runs[0]?.pagesStored, PAGES, 'no page stored twice');
  assert.equal(await db.prisma.fetchedPage.count(), 0, 'no staged page left behind');

  const partnerIds = Array.from({ length: RECORDS }, (_, i) => makeRecord(sourceId, date, i + 1).id).sort();
  const stored = await db.prisma.fetchedRecord.findMany({
    where: { sourceId },
    select: { externalId: true },
  });
  assert.equal(stored.length, RECORDS);
  assert.equal(new Set(stored.map((r) => r.externalId)).size, RECORDS, 'each external id once');
  assert.deepEqual(stored.map((r) => r.externalId).sort(), partnerIds);

  const events = await db.prisma.outboxEvent.findMany({ where: { aggregateId: fetchRunId } });
  const pages = events
    .filter((e) => e.topic === 'fetch.page_stored')
    .map((e) => e.payload as { pageNo: number; externalIds: string[] });
  assert.deepEqual(
    pages.map((p) => p.pageNo).sort((a, b) => a - b),
    [0, 1, 2],
    'one page event per page',
  );
  assert.equal(events.filter((e) => e.topic === 'fetch.run_completed').length, 1);
  assert.equal(events.length, PAGES + 1, 'no duplicate outbox events');
  assert.deepEqual(pages.flatMap((p) => p.externalIds).sort(), partnerIds);

  const keys = Array.from({ length: PAGES }, (_, n) =>
    pageKeyFor({ jobType: 'fetch-records', sourceId: sourceId, businessDate: date }, n),
  );
  const idempotency = await db.prisma.idempotencyRecord.findMany({ select: { key: true } });
  assert.deepEqual(idempotency.map((r) => r.key).sort(), keys, 'each page committed once');
}

/** Worker B finishes the run; returns its result after checking it and stopping B. */
async function finishOnB(
  w: Parameters<Parameters<typeof withWorld>[1]>[0],
  started: Awaited<ReturnType<typeof startFetch>>,
) {
  const workerB = w.startWorker();
  await workerB.waitFor(/worker polling task queue/, 60_000);
  const result = await within(
    started.handle.result(),
    90_000,
    () => `the run's result:\n${workerB.output()}`,
  );
  assert.deepEqual(result, {
    status: 'succeeded',
    fetchRunId: result.fetchRunId,
    pages: PAGES,
    records: RECORDS,
  });
  assert.equal(await workerB.stop('SIGTERM', 30_000), 0, workerB.output());
  assert.match(workerB.output(), /worker stopped/);
  return result;
}

describe('graceful shutdown', { concurrency: true }, () => {
  it(
    'graceful-shutdown: SIGTERM during a long page lets it finish within the grace time; no run lost, no duplicate rows',
    { timeout: 240_000 },
    async (t) => {
      const scenario: Scenario = {
        sourceId: 'gs-finish',
        date: '2026-08-01',
        graceMs: 15_000,
        delayMs: 3_000,
      };
      await withWorld(scenario, async (w) => {
        const { started, workerA, exit, stopMs } = await sigtermWhileHeld(scenario, w);
        t.diagnostic(`worker A stopped ${(stopMs / 1000).toFixed(1)} s after SIGTERM`);
        assert.deepEqual(exit, { code: 0, signal: null }, workerA.output());
        assert.match(workerA.output(), /worker stopped/);
        // A waited for the held request: the partner answered it (200) before A exited, and the
        // client never left (no 499).
        const key = pageKeyFor(
          { jobType: 'fetch-records', sourceId: scenario.sourceId, businessDate: scenario.date },
          1,
        );
        assert.deepEqual(heldRequests(w.partner, scenario.sourceId, scenario.date), [
          { status: 200, fault: 'delay', idempotencyKey: key },
        ]);
        // The activity ran to its end on A: page 1 is staged in full (its second request too),
        // waiting for its store step, which A no longer polls for.
        const staged = await w.db.prisma.fetchedPage.findMany();
        assert.deepEqual(
          staged.map((p) => ({ key: p.key, recordCount: p.recordCount, complete: p.complete })),
          [{ key, recordCount: PAGE_SIZE, complete: false }],
        );
        const run = await w.db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: scenario.sourceId } });
        assert.deepEqual([run.status, run.pagesStored], ['running', 1]);

        const result = await finishOnB(w, started);
        await assertStoredOnce(w.db, scenario.sourceId, scenario.date, result.fetchRunId);
        // B used what A fetched: the held request was never repeated.
        assert.equal(heldRequests(w.partner, scenario.sourceId, scenario.date).length, 1);
      });
    },
  );

  it(
    'graceful-shutdown: SIGTERM during a long page cancels it after the grace time and another worker retries it; no run lost, no duplicate rows',
    { timeout: 240_000 },
    async (t) => {
      const scenario: Scenario = {
        sourceId: 'gs-cancel',
        date: '2026-08-02',
        graceMs: 1_000,
        delayMs: 60_000,
      };
      await withWorld(scenario, async (w) => {
        const { started, workerA, exit, stopMs } = await sigtermWhileHeld(scenario, w);
        t.diagnostic(`worker A stopped ${(stopMs / 1000).toFixed(1)} s after SIGTERM`);
        assert.deepEqual(exit, { code: 0, signal: null }, workerA.output());
        assert.match(workerA.output(), /worker stopped/);
        // Generous, yet below both the default grace (20 s) and the quick preset's 30 s attempt
        // timeout: only the configured 1 s grace and its cancellation stop A this early.
        assert.ok(stopMs < 15_000, `A stopped long before the held request would end (${stopMs} ms)`);
        // The cancellation reached the partner: the client left while the request was held.
        const key = pageKeyFor(
          { jobType: 'fetch-records', sourceId: scenario.sourceId, businessDate: scenario.date },
          1,
        );
        assert.deepEqual(heldRequests(w.partner, scenario.sourceId, scenario.date), [
          { status: 499, fault: 'client_closed', idempotencyKey: key },
        ]);
        // Nothing of page 1 was staged; page 0 was stored before.
        assert.equal(await w.db.prisma.fetchedPage.count(), 0);
        const run = await w.db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: scenario.sourceId } });
        assert.deepEqual([run.status, run.pagesStored], ['running', 1]);

        const result = await finishOnB(w, started);
        await assertStoredOnce(w.db, scenario.sourceId, scenario.date, result.fetchRunId);
        // B asked again for the cancelled request, with the same Idempotency-Key, and got it at once.
        // (The partner would still answer the abandoned held request after its 60 s: not counted.)
        assert.deepEqual(
          heldRequests(w.partner, scenario.sourceId, scenario.date).filter((e) => e.fault !== 'delay'),
          [
            { status: 499, fault: 'client_closed', idempotencyKey: key },
            { status: 200, fault: undefined, idempotencyKey: key },
          ],
        );
        // Temporal retried the cancelled attempt: the SDK reports an activity cancelled by its
        // worker's shutdown as a retryable failure of type WorkerShutdown, and page 1's fetch
        // completed on the next attempt (on B); the other pages on their first.
        const fetches = await fetchPageAttempts(started.handle);
        t.diagnostic(`page 1: ${JSON.stringify(fetches.find((f) => f.pageNo === 1))}`);
        assert.deepEqual(
          fetches.map((f) => [f.pageNo, f.attempt, f.lastFailureType]),
          [
            [0, 1, undefined],
            [1, 2, 'WorkerShutdown'],
            [2, 1, undefined],
          ],
        );
      });
    },
  );

  it(
    'graceful-shutdown: a second SIGTERM during the grace time stops the worker at once; the run is still completed elsewhere',
    { timeout: 240_000 },
    async (t) => {
      const scenario: Scenario = {
        sourceId: 'gs-force',
        date: '2026-08-03',
        graceMs: 60_000,
        delayMs: 60_000,
      };
      await withWorld(scenario, async (w) => {
        const { started, workerA, exit, stopMs } = await sigtermWhileHeld(scenario, w, true);
        t.diagnostic(`worker A stopped ${(stopMs / 1000).toFixed(1)} s after the first SIGTERM`);
        // Not a clean stop: it says so and exits 143 (128 + SIGTERM), without waiting out the grace.
        assert.deepEqual(exit, { code: 143, signal: null }, workerA.output());
        assert.match(workerA.output(), /second SIGTERM, stopping now/);
        assert.doesNotMatch(workerA.output(), /worker stopped/);
        assert.ok(stopMs < 15_000, `A stopped long before its 60 s grace (${stopMs} ms)`);

        // The attempt left behind on A is retried once its heartbeat times out.
        const result = await finishOnB(w, started);
        await assertStoredOnce(w.db, scenario.sourceId, scenario.date, result.fetchRunId);
        const fetches = await fetchPageAttempts(started.handle);
        assert.deepEqual(
          fetches.map((f) => [f.pageNo, f.attempt]),
          [
            [0, 1],
            [1, 2],
            [2, 1],
          ],
        );
      });
    },
  );
});

interface FetchPageAttempt {
  pageNo: number;
  /** The attempt that ended the activity (its last start). */
  attempt: number;
  /** Type and message of the failure of the attempt before it, if any. */
  lastFailureType: string | undefined;
  lastFailure: string | undefined;
}

/** From the run's history: each fetchPage's page, the attempt that ended it, and its last failure. */
async function fetchPageAttempts(
  handle: Awaited<ReturnType<typeof startFetch>>['handle'],
): Promise<FetchPageAttempt[]> {
  const history = await handle.fetchHistory();
  const events = history.events ?? [];
  const scheduled = new Map<string, number>();
  const out: FetchPageAttempt[] = [];
  for (const e of events) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s?.activityType?.name === 'fetchPage') {
      const payload = s.input?.payloads?.[0]?.data;
      const input = payload
        ? (JSON.parse(Buffer.from(payload).toString('utf8')) as { pageNo: number })
        : undefined;
      scheduled.set(String(e.eventId), input?.pageNo ?? -1);
    }
    const started = e.activityTaskStartedEventAttributes;
    const pageNo = started ? scheduled.get(String(started.scheduledEventId)) : undefined;
    if (started && pageNo !== undefined) {
      out.push({
        pageNo,
        attempt: started.attempt ?? 0,
        lastFailureType: started.lastFailure?.applicationFailureInfo?.type ?? undefined,
        lastFailure: started.lastFailure?.message ?? undefined,
      });
    }
  }
  return out;
}
