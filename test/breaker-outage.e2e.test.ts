// R8's circuit breaker end to end: two real `durable-fetch worker` processes on one task queue, the
// shared Temporal dev server, a cloned database and the demo partner, whose ledger is the judge.
// Partner A (source breaker-a, downstream ds-a) answers every page call with a slow 503 for a
// while; partner B (breaker-b, ds-b) stays healthy. The scenario runs once in `before`; each test
// asserts one behaviour on what it recorded. Downstreams share the workers' task queue here: the
// breaker is per downstream, and a refused call fails at once, so it holds no worker slot. With
// per-downstream task queues, `isolated: true` on the two rows is all this needs.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { startFetch } from '../client/start-fetch.ts';
import type { LedgerEntry } from '../partner/ledger.ts';
import { type BreakerTimeline, createDownstream, watchBreaker } from './helpers/breaker-watch.ts';
import { createSource } from './helpers/deps.ts';
import { scrapeMetrics } from './helpers/metrics.ts';
import { answeredBetween } from './helpers/partner-calls.ts';
import { metricsUrlOf, within } from './helpers/process.ts';
import { useWorkerStack } from './helpers/worker-stack.ts';

const A = 'breaker-a';
const B = 'breaker-b';
const A_RECORDS = 30; // one page of one partner call
const B_RECORDS = 200; // two pages of two partner calls each
/** Small settings for a quick test: opens at half of 4 calls, 3 s open, one trial at a time. */
const BREAKER = { failureRate: 0.5, minCalls: 4, windowMs: 10_000, openMs: 3_000, trialCalls: 1 };
/** The retry budget never refuses here (ratio 1): every refusal seen is the breaker's. */
const NO_BUDGET = { ratio: 1, minRetries: 100_000, windowMs: 10_000 };
/** A's outage: each call answered 503 after this long, holding a worker slot meanwhile. */
const SLOW_MS = 600;
const A_RUNS = 6;
const B_RUNS = 6;
/** Worker slots per process: few, so that calls held by an unwell partner would show in B's pace. */
const SLOTS = 4;
/** B's pace with A down, against its pace alone: generous, as both batches last a few seconds on a shared 2-core machine. */
const PACE_RATIO_MAX = 3;
const WAIT_MS = 90_000;

const stack = useWorkerStack({
  name: 'breaker-outage',
  records: (sourceId) => (sourceId === A ? A_RECORDS : B_RECORDS),
  workers: 2,
  env: { DURABLE_FETCH_WORKER_ACTIVITY_SLOTS: String(SLOTS), DURABLE_FETCH_CLEANUP_INTERVAL_MS: '0' },
});

const dates = (day: number, n: number) =>
  Array.from({ length: n }, (_, i) => `2026-11-${String(day + i).padStart(2, '0')}`);

/** Starts a run of `sourceId` for each date; resolves with their results and how long they took. */
async function batch(sourceId: string, days: string[]) {
  const started = performance.now();
  const ctx = {
    temporal: stack.client,
    prisma: stack.db.prisma,
    taskQueue: stack.taskQueue,
    now: () => new Date('2026-11-30T12:00:00Z'),
  };
  const runs = await Promise.all(
    days.map((date) => startFetch(ctx, { sourceId, date, requestedBy: 'test' })),
  );
  const results = await within(Promise.all(runs.map((r) => r.handle.result())), WAIT_MS, () =>
    stack.workers.map((w) => w.output()).join('\n'),
  );
  return { results, ms: performance.now() - started, workflowIds: runs.map((r) => r.workflowId) };
}

/** Calls refused for ds-a by one worker process (any reason), from its /metrics. */
async function refusedByWorker(url: string): Promise<number> {
  let sum = 0;
  for (const [key, value] of await scrapeMetrics(url)) {
    if (key.startsWith('durable_fetch_breaker_refused_calls_total{downstream="ds-a"')) sum += value;
  }
  return sum;
}

/** The highest attempt any fetchPage of `workflowId` reached (its history's last start of each). */
async function maxFetchAttempt(workflowId: string): Promise<number> {
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  return Math.max(
    0,
    ...(history.events ?? []).map((e) => e.activityTaskStartedEventAttributes?.attempt ?? 0),
  );
}

const seen = {} as {
  baselineMs: number;
  outageMs: number;
  bResults: string[];
  timeline: BreakerTimeline;
  downAt: Date;
  recoveredAt: Date;
  aCalls: LedgerEntry[];
  aResults: { status: string; fetchRunId?: string }[];
  aWorkflows: string[];
  refused: number[];
};

describe('circuit breaker outage (R8)', () => {
  // Inside the suite: after the stack's own hook.
  before(async () => {
    const { prisma } = stack.db;
    for (const id of ['ds-a', 'ds-b'])
      await createDownstream(prisma, { id, breaker: BREAKER, retryBudget: NO_BUDGET });
    await createSource(prisma, A, stack.partner.url, {
      downstream: 'ds-a',
      submitSummary: true,
      submitMaxProcessingMs: 2_000,
    });
    await createSource(prisma, B, stack.partner.url, { downstream: 'ds-b' });
    const metrics = await Promise.all(stack.workers.map((w) => metricsUrlOf(w)));

    // Unmeasured: the first workflow and activity tasks of a worker process are slow (its workflow
    // bundle loads, its connections open); the baseline must not carry that.
    await batch(B, dates(1, B_RUNS));
    const baseline = await batch(B, dates(11, B_RUNS));
    seen.baselineMs = baseline.ms;

    seen.downAt = new Date();
    stack.partner.faults.add({
      sourceId: A,
      kind: 'status',
      status: 503,
      delayMs: SLOW_MS,
      times: 1_000_000,
    });
    const watch = watchBreaker(prisma, 'ds-a', BREAKER.openMs);
    const aBatch = batch(A, dates(1, A_RUNS));
    aBatch.catch(() => {}); // awaited below; a failure must not go unhandled meanwhile
    await watch.until((t) => t.opened.length >= 1, 'the breaker of ds-a to open', WAIT_MS);
    const during = await batch(B, dates(21, B_RUNS));
    seen.outageMs = during.ms;
    seen.bResults = during.results.map((r) => r.status);
    // Down until B's batch is done and a trial has failed (the breaker opened a second time).
    await watch.until((t) => t.opened.length >= 2, 'a failed trial to reopen the breaker', WAIT_MS);
    stack.partner.faults.clear();
    seen.recoveredAt = new Date();
    await watch.until((t) => t.closed.length >= 1, 'the breaker of ds-a to close', WAIT_MS);
    const a = await aBatch;
    await watch.stop();
    seen.timeline = watch.timeline;
    seen.aResults = a.results;
    seen.aWorkflows = a.workflowIds;
    seen.aCalls = stack.partner.ledger.entries({ sourceId: A });
    seen.refused = await Promise.all(metrics.map(refusedByWorker));
  });

  it('R8: B runs at its normal pace while A is down (batch time with the outage / without)', () => {
    const ratio = seen.outageMs / seen.baselineMs;
    console.log(
      `B batch of ${B_RUNS}: alone ${Math.round(seen.baselineMs)} ms, with A down ${Math.round(seen.outageMs)} ms, ratio ${ratio.toFixed(2)}`,
    );
    assert.deepEqual(seen.bResults, Array(B_RUNS).fill('succeeded'));
    assert.ok(
      ratio <= PACE_RATIO_MAX,
      `B took ${ratio.toFixed(2)} × its time alone (bound ${PACE_RATIO_MAX})`,
    );
  });

  it('R8: while the breaker is open A receives only its trial calls (ledger per open period)', () => {
    const { opened, closed } = seen.timeline;
    const ends = [...opened.slice(1), closed[0]?.at];
    const perPeriod = opened.map((from, k) => answeredBetween(seen.aCalls, from, ends[k]).length);
    const since = (at: Date | string) => new Date(at).getTime() - seen.downAt.getTime();
    console.log(
      [
        `A (ms since it went down): opened ${JSON.stringify(opened.map(since))}, back ${since(seen.recoveredAt)},`,
        `closed ${JSON.stringify(closed.map((c) => since(c.at)))}; calls answered (ms:status)`,
        seen.aCalls.map((e) => `${since(e.at)}:${e.status}`).join(' '),
        `\nper open period ${JSON.stringify(perPeriod)}; refused by the two workers ${JSON.stringify(seen.refused)}`,
      ].join(' '),
    );
    assert.ok(opened.length >= 2, 'the outage lasted past a failed trial');
    // The first period also gets the calls let through before it opened and answered after it:
    // each other A run has at most one call in flight (the run whose failure opened it was
    // answered already), hence A_RUNS − 1 of them at most, besides its one trial.
    const [first = 0, ...later] = perPeriod;
    assert.ok(
      first >= BREAKER.trialCalls && first <= A_RUNS - 1 + BREAKER.trialCalls,
      `first period: ${first}`,
    );
    // Every later period: its trial and nothing else. One that ended in a reopening had a trial
    // that failed; the last ended when its trial succeeded.
    assert.deepEqual(later, Array(later.length).fill(BREAKER.trialCalls));
  });

  it('R8: two workers share the breaker: once open, neither calls A but for the trials; both refused calls', () => {
    const [opening] = seen.timeline.opened;
    assert.ok(opening);
    const afterOpen = answeredBetween(seen.aCalls, opening, seen.timeline.closed[0]?.at);
    const trials = seen.timeline.opened.length * BREAKER.trialCalls;
    assert.ok(afterOpen.length <= A_RUNS - 1 + trials, `${afterOpen.length} calls between open and recovery`);
    assert.equal(seen.refused.length, 2);
    for (const [i, n] of seen.refused.entries()) assert.ok(n > 0, `worker ${i + 1} refused no call to A`);
  });

  it('R8: after A recovers the breaker closes and A runs complete with no duplicate row, event or effect', async () => {
    const { prisma } = stack.db;
    const [closing] = seen.timeline.closed;
    assert.ok(closing && closing.at >= seen.recoveredAt, 'closed after the recovery');
    assert.deepEqual([closing.reason, closing.changedBy], ['a trial call succeeded', 'system:breaker']);
    assert.equal((await prisma.breaker.findUniqueOrThrow({ where: { downstream: 'ds-a' } })).state, 'closed');
    assert.equal(await prisma.breaker.count({ where: { downstream: 'ds-b', state: { not: 'closed' } } }), 0);
    const attempts = await Promise.all(seen.aWorkflows.map(maxFetchAttempt));
    console.log(`A's fetchPage attempts per run (refusals count as attempts): ${JSON.stringify(attempts)}`);
    assert.deepEqual(
      seen.aResults.map((r) => r.status),
      Array(A_RUNS).fill('succeeded'),
    );
    assert.equal(await prisma.fetchedRecord.count({ where: { sourceId: A } }), A_RUNS * A_RECORDS);
    const runIds = seen.aResults.map((r) => r.fetchRunId ?? assert.fail('no run id'));
    const events = await prisma.outboxEvent.findMany({ where: { aggregateId: { in: runIds } } });
    // One page stored and one run completed per run, each event once.
    assert.equal(events.length, A_RUNS * 2);
    assert.equal(new Set(events.map((e) => `${e.aggregateId}/${e.topic}`)).size, A_RUNS * 2);
    // The partner's effect: one confirmed submission per run, never a second.
    const submissions = stack.partner.submissions
      .list()
      .filter((s) => s.reference.startsWith(`fetch-records:${A}:`));
    assert.equal(submissions.length, A_RUNS);
    assert.equal(new Set(submissions.map((s) => s.reference)).size, A_RUNS);
    assert.ok(submissions.every((s) => s.status === 'confirmed'));
  });
});
