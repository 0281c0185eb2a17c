// Local page fetches (`localFetch`, a new source's default): the run's fetchPage calls are local
// activities, run by the worker that runs the workflow, instead of activity tasks (as an isolated
// downstream's, or `localFetch: false`, run). What a regular fetch guarantees
// must hold all the same (R1, R7, R9): every record stored once, a partner's 503 and 429 retried
// with R7's timing, a cancel reaching a fetch the partner never answers, and a worker killed in
// the middle of a fetch taken over by another worker, which asks for the page again. On real
// processes: `durable-fetch worker`s, the shared Temporal dev server, a cloned database and the
// demo partner, whose ledger and faults are the judge. Source ids start with `lf-`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startFetch, type StartedFetch } from '../client/start-fetch.ts';
import { waitFor } from './helpers/outbox.ts';
import { activityTasks, localAttempts } from './helpers/page-fetches.ts';
import { within } from './helpers/process.ts';
import { createSource } from './helpers/deps.ts';
import { takeOverHeldRun, useWorkerStack } from './helpers/worker-stack.ts';

/** Records per source and date: three partner pages of 50 (the stack's partner page limit). */
const RECORDS = 150;
/** Longer than any test: a held partner call ends only when its client stops it. */
const HOLD_MS = 300_000;

const stack = useWorkerStack({
  name: 'local-fetch',
  records: RECORDS,
  env: { HTTP_RESPONSE_TIMEOUT_MS: String(HOLD_MS) },
});

const localSource = (id: string) =>
  createSource(stack.db.prisma, id, stack.partner.url, { pageSize: 50, localFetch: true });

const start = (sourceId: string, date: string, taskQueue = stack.taskQueue): Promise<StartedFetch> =>
  startFetch(
    { temporal: stack.client, prisma: stack.db.prisma, taskQueue },
    { sourceId, date, requestedBy: 'test' },
  );

/**
 * How the run's page fetches ran, by its history: activity tasks, local attempts (each with its
 * failure type, if it failed, and whether its retry waits on a timer), timed-out workflow tasks.
 */
async function dispatchOf(workflowId: string) {
  const events = (await stack.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const local = localAttempts(events, 'fetchPage').map((a) => ({ ...a, failed: a.failureType !== null }));
  const workflowTasksTimedOut = events.filter((e) => e.workflowTaskTimedOutEventAttributes).length;
  return { tasks: activityTasks(events, 'fetchPage'), local, workflowTasksTimedOut };
}

/**
 * The run's rows: its status, pages and records stored, its page events and the record ids they
 * list (all of them, and how many distinct: a page stored twice would list its ids twice).
 */
async function stored(sourceId: string, date: string) {
  const businessDate = new Date(`${date}T00:00:00Z`);
  const run = await stack.db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId, businessDate } });
  const [records, events, deadLetters] = await Promise.all([
    stack.db.prisma.fetchedRecord.count({ where: { sourceId, businessDate } }),
    stack.db.prisma.outboxEvent.findMany({
      where: { topic: 'fetch.page_stored', payload: { path: ['fetchRunId'], equals: run.id } },
      select: { payload: true },
    }),
    stack.db.prisma.deadLetter.count({ where: { fetchRunId: run.id } }),
  ]);
  const ids = events.flatMap((e) => (e.payload as { externalIds: string[] }).externalIds);
  return {
    status: run.status,
    pagesStored: run.pagesStored,
    records,
    pageEvents: events.length,
    idsPublished: ids.length,
    distinctIdsPublished: new Set(ids).size,
    deadLetters,
  };
}

/** What {@link stored} finds of a run that stored its three pages, every record once. */
const STORED_ONCE = {
  status: 'succeeded',
  pagesStored: 3,
  records: RECORDS,
  pageEvents: 3,
  idsPublished: RECORDS,
  distinctIdsPublished: RECORDS,
  deadLetters: 0,
};

/** The partner's answers to the records calls of `sourceId` for `date`, in order. */
const callsOf = (sourceId: string, date: string) =>
  stack.partner.ledger
    .entries({ sourceId })
    .filter((e) => e.date === date)
    .sort((a, b) => a.seq - b.seq);

describe('local page fetches', { timeout: 240_000 }, () => {
  it("a local-fetch source's run stores every record once; its fetches are local activities, a 503 and a 429 retried as R7 says", async () => {
    const source = 'lf-retries';
    const date = '2026-06-01';
    await localSource(source);
    // The first call answers 503, the third (page 2's first) a 429 with Retry-After: two retries.
    stack.partner.faults.add({ sourceId: source, kind: 'status', status: 503 });
    stack.partner.faults.add({
      sourceId: source,
      kind: 'status',
      status: 429,
      retryAfter: '2',
      afterRequests: 2,
    });
    const run = await start(source, date);
    const result = await within(run.handle.result(), 120_000, () => stack.worker.output());

    assert.deepEqual(result, {
      status: 'succeeded',
      fetchRunId: result.fetchRunId,
      pages: 3,
      records: RECORDS,
    });
    assert.deepEqual(await stored(source, date), STORED_ONCE);
    const calls = callsOf(source, date);
    assert.deepEqual(
      calls.map((c) => c.status),
      [503, 200, 429, 200, 200],
    );
    // Each page asked with its own key, a retried one with the same key again.
    const keys = calls.map((c) => c.idempotencyKey);
    assert.deepEqual([keys[0] === keys[1], keys[2] === keys[3], new Set(keys).size], [true, true, 3]);
    // The partner's Retry-After is honoured by the local retry, as by a regular one (R7).
    const waited = Date.parse(calls[3]?.at ?? '') - Date.parse(calls[2]?.at ?? '');
    assert.ok(waited >= 2_000, `the retry after the 429 came ${waited} ms later, not after Retry-After: 2`);

    const dispatch = await dispatchOf(run.workflowId);
    assert.equal(dispatch.tasks, 0, 'no fetchPage activity task was scheduled');
    assert.deepEqual(
      dispatch.local.map((f) => [f.attempt, f.failed]),
      [
        [2, false],
        [2, false],
        [1, false],
      ],
      'three local fetches, the first two on their second attempt',
    );
  });

  it('a cancel reaches a local fetch waiting on a partner that does not answer: the run ends cancelled, no dead letter', async () => {
    const source = 'lf-cancel';
    const date = '2026-06-02';
    await localSource(source);
    // Page 2 is held past the test: only the cancellation can end that call.
    stack.partner.faults.add({ sourceId: source, kind: 'delay', delayMs: HOLD_MS, afterRequests: 1 });
    const run = await start(source, date);
    await waitFor(
      () => stack.partner.faults.list().every((f) => f.sourceId !== source),
      'the partner holding page 2',
      60_000,
    );
    await run.handle.cancel();
    await within(
      run.handle.result().then(
        () => assert.fail('a cancelled run must not succeed'),
        () => undefined,
      ),
      60_000,
      () => stack.worker.output(),
    );

    assert.equal((await run.handle.describe()).status.name, 'CANCELLED');
    const rows = await stored(source, date);
    assert.deepEqual(
      [rows.status, rows.pagesStored, rows.records, rows.deadLetters],
      ['cancelled', 1, 50, 0],
    );
    // The cancel stopped the partner call itself: the partner saw its client leave (499).
    assert.deepEqual(
      callsOf(source, date).map((c) => [c.status, c.fault ?? null]),
      [
        [200, null],
        [499, 'client_closed'],
      ],
    );
    const dispatch = await dispatchOf(run.workflowId);
    assert.equal(dispatch.tasks, 0, 'no fetchPage activity task was scheduled');
    assert.deepEqual(
      dispatch.local.map((f) => f.failed),
      [false, true],
      'the first page fetched, the second ended by the cancel',
    );
  });

  it('a worker killed during a local fetch: another worker fetches the page again and every record is stored once', async () => {
    const { stopped, dispatch } = await takenOver('lf-killed', '2026-06-03', 'SIGKILL');
    assert.equal(dispatch.tasks, 0, 'no fetchPage activity task was scheduled');
    // The killed worker's workflow task timed out. Unless it had completed one beforehand (a
    // workflow task running local activities completes every 8 s of the default 10 s timeout),
    // its claim and first page are not in the history: the next worker's claim found page 1
    // stored in the database and went on from page 2.
    assert.ok(dispatch.workflowTasksTimedOut >= 1, 'the killed worker’s workflow task timed out');
    assert.ok(
      dispatch.local.length >= 2,
      `${dispatch.local.length} local fetches recorded, at least pages 2 and 3`,
    );
    assert.ok(
      dispatch.local.every((f) => !f.failed),
      'every local fetch the history records succeeded',
    );
    assert.equal(stopped.exit.signal, 'SIGKILL');
  });

  it('a worker stopped (SIGTERM) during a local fetch: it stops its fetch when the grace time is over and exits; another worker fetches the page again after a timer', async () => {
    const { stopped, dispatch } = await takenOver('lf-stopped', '2026-06-04', 'SIGTERM');
    // Stopped by the grace time (1 s), not by the held call (5 min) or the attempt's timeout (2 min).
    assert.deepEqual(stopped.exit, { code: 0, signal: null }, stopped.output);
    assert.ok(stopped.ms < 30_000, `the worker stopped ${stopped.ms} ms after SIGTERM`);
    assert.equal(dispatch.tasks, 0, 'no fetchPage activity task was scheduled');
    assert.equal(dispatch.workflowTasksTimedOut, 0, 'the stopping worker completed its workflow task');
    // Page 2's first attempt failed as WorkerShutdown and waited on a durable timer (the stopping
    // worker did not retry it); its second attempt ran on the other worker.
    assert.deepEqual(
      dispatch.local.map((f) => [f.attempt, f.failureType, f.timer]),
      [
        [1, null, false],
        [1, 'WorkerShutdown', true],
        [2, null, false],
        [1, null, false],
      ],
    );
  });
});

/**
 * A run of a new local-fetch source whose first worker gets `signal` while the partner holds
 * page 2, then a second worker on the same queue. Asserts what holds either way: the run
 * succeeded, every record stored once, page 2 asked twice under its key (the first call seen
 * leaving). Returns how the first worker stopped and the run's history.
 */
async function takenOver(source: string, date: string, signal: 'SIGKILL' | 'SIGTERM') {
  await localSource(source);
  const { result, stopped, workflowId } = await takeOverHeldRun(stack, {
    name: `local-fetch-${source}`,
    holdMs: HOLD_MS,
    signal,
    start: (taskQueue) => {
      // Page 2 is held past the test: the first worker is inside that fetch when it gets the signal.
      stack.partner.faults.add({ sourceId: source, kind: 'delay', delayMs: HOLD_MS, afterRequests: 1 });
      return start(source, date, taskQueue);
    },
    held: () => stack.partner.faults.list().every((f) => f.sourceId !== source),
  });

  assert.equal(result.status, 'succeeded');
  assert.deepEqual(await stored(source, date), STORED_ONCE);
  // Page 2 was asked twice with the same key: by the first worker (the partner saw it leave)
  // and by the worker that took the run over.
  const calls = callsOf(source, date);
  assert.deepEqual(
    calls.map((c) => [c.status, c.fault ?? null]),
    [
      [200, null],
      [499, 'client_closed'],
      [200, null],
      [200, null],
    ],
  );
  const keys = calls.map((c) => c.idempotencyKey);
  assert.deepEqual([keys[1] === keys[2], new Set(keys).size], [true, 3], 'page 2 asked again under its key');
  return { stopped, dispatch: await dispatchOf(workflowId) };
}
