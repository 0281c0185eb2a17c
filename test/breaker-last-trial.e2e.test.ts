// R7/R8 (issue 35, 1b): a run whose page step meets a partner outage as refusals and then a
// failed half-open trial on its last attempt outlasts it. The step's attempts 1–5 are refused
// (an operator holds the breaker open), its 6th and last (`partnerHttpQuick`: 6 attempts) goes out
// as the trial and gets a 503; that failure ends the step as CircuitOpen, as a refusal would, so
// the workflow waits for the breaker and runs the step again, whose trial finds the partner back.
// Before, the step ended with the trial's UpstreamUnavailable and the run was dead-lettered. On
// real processes: a `durable-fetch worker`, the shared Temporal dev server, a cloned database and
// the demo partner, whose ledger and records are the judge. Source ids start with `blt-`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import proto, { type temporal } from '@temporalio/proto';
import { launchFetch, prepareFetch } from '../client/start-fetch.ts';
import { setBreaker } from '../db/retry/breaker.ts';
import { makeRecord } from '../partner/records.ts';
import { RETRY_PRESETS } from '../contract/retry-presets.ts';
import { createDownstream } from './helpers/breaker-watch.ts';
import { createSource } from './helpers/deps.ts';
import { within } from './helpers/process.ts';
import { useWorkerStack } from './helpers/worker-stack.ts';

const SOURCE = 'blt-a';
const DS = 'blt-api';
const DATE = '2026-10-10';
const RECORDS = 30; // one page, one partner call
const ATTEMPTS = RETRY_PRESETS.partnerHttpQuick.retry.maximumAttempts;
/**
 * The breaker's open time: a forced-open refusal waits it (stretched by up to half), so the test
 * has at least this long, between seeing the last attempt scheduled and its start, to let it
 * through as a trial. It is also how long the failed trial re-opens the breaker for.
 */
const OPEN_MS = 4_000;
/** Refusals of the first attempts (each ≤ 1.5 × OPEN_MS) and the workflow's wait after the trial, with room. */
const WAIT_MS = ATTEMPTS * 1.5 * OPEN_MS + 60_000;

const stack = useWorkerStack({ name: 'breaker-last-trial', records: RECORDS });

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const SCHEDULED = proto.temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED;

/** The code in the (JSON) details of a failure as Temporal holds it. */
function codeOf(failure: temporal.api.failure.v1.IFailure | null | undefined): string | undefined {
  const data = failure?.applicationFailureInfo?.details?.payloads?.[0]?.data;
  return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { code?: string }).code : undefined;
}

/** The fetchPage pending in `workflowId`, as `describe` shows it. */
async function pendingFetch(workflowId: string) {
  const { raw } = await stack.client.workflow.getHandle(workflowId).describe();
  return raw.pendingActivities?.find((a) => a.activityType?.name === 'fetchPage');
}

describe('a failed trial on the last attempt (R7, R8)', { timeout: WAIT_MS + 60_000 }, () => {
  it('a page step refused on its first attempts whose last attempt is a failed trial waits for the breaker, runs again, and the run succeeds once the partner is back', async () => {
    const { db, client, partner, taskQueue } = stack;
    // Written before the worker first reads them (it caches settings for 5 s).
    await createDownstream(db.prisma, {
      id: DS,
      breaker: { failureRate: 0.5, minCalls: 4, windowMs: 60_000, openMs: OPEN_MS, trialCalls: 1 },
    });
    // Its page fetches as activity tasks (as an isolated downstream's are): the test watches the
    // pending activity's attempts to let the breaker's trial through exactly at the last one.
    await createSource(db.prisma, SOURCE, partner.url, {
      downstream: DS,
      retryPolicy: 'partnerHttpQuick',
      localFetch: false,
    });
    await setBreaker(db.prisma, DS, 'open', { actor: 'test', reason: 'partner maintenance' });
    // The partner's outage as its calls see it: the first call that reaches it (the trial) gets a
    // 503; the next finds it back.
    partner.faults.add({ sourceId: SOURCE, kind: 'status', status: 503, times: 1 });

    const ctx = { temporal: client, prisma: db.prisma, taskQueue };
    const prepared = await prepareFetch(ctx, { sourceId: SOURCE, date: DATE, requestedBy: 'test' });
    const { workflowId, handle } = await launchFetch(ctx, prepared);

    // Attempts 1..ATTEMPTS−1 refused; once the last is scheduled (waiting out the refusal's delay),
    // the breaker lets one trial through: open, not forced, its open time over.
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const pending = await pendingFetch(workflowId);
      assert.ok((pending?.attempt ?? 0) <= ATTEMPTS, 'the step went on past its last attempt');
      if (pending?.attempt === ATTEMPTS) {
        assert.equal(codeOf(pending.lastFailure), 'BREAKER_FORCED_OPEN', 'the attempt before was refused');
        await db.prisma.$executeRaw`
          UPDATE breaker SET forced = false, state = 'open', half_open_at = now(), reason = 'test: trial'
           WHERE downstream = ${DS}`;
        // Still scheduled, not started: the last attempt is the one the breaker lets through.
        const after = await pendingFetch(workflowId);
        assert.equal(after?.attempt, ATTEMPTS);
        assert.equal(after?.state, SCHEDULED, 'let through before it started');
        break;
      }
      assert.ok(Date.now() < deadline, `the last attempt was never scheduled\n${stack.worker.output()}`);
      await sleep(50);
    }
    assert.equal(partner.ledger.count({ sourceId: SOURCE }), 0, 'no call while the breaker was forced open');

    const result = await within(handle.result(), WAIT_MS, () => stack.worker.output());
    assert.equal(result.status, 'succeeded');

    // The partner saw the failed trial and the trial of the step run again: nothing else.
    const calls = partner.ledger.entries({ sourceId: SOURCE });
    assert.deepEqual(
      calls.map((c) => c.status),
      [503, 200],
    );
    // The first fetchPage ended at its last attempt with CircuitOpen TRIAL_FAILED (the partner's
    // words kept); the workflow waited on a timer and scheduled the step again.
    const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const fetches = events.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'fetchPage',
    );
    assert.equal(fetches.length, 2, 'the step ran twice');
    const firstId = String(fetches[0]?.eventId);
    const started = events.find(
      (e: HistoryEvent) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === firstId,
    );
    assert.equal(started?.activityTaskStartedEventAttributes?.attempt, ATTEMPTS);
    const failedAt = events.findIndex(
      (e) => String(e.activityTaskFailedEventAttributes?.scheduledEventId) === firstId,
    );
    const failure = events[failedAt]?.activityTaskFailedEventAttributes?.failure;
    assert.equal(failure?.applicationFailureInfo?.type, 'CircuitOpen');
    assert.equal(codeOf(failure), 'TRIAL_FAILED');
    assert.match(
      failure?.message ?? '',
      /\(503\): "injected status 503" \(UpstreamUnavailable\);.*failed as a trial call/,
    );
    const timer = events.findIndex((e, i) => i > failedAt && e.timerStartedEventAttributes);
    assert.ok(
      timer > failedAt && timer < events.indexOf(fetches[1] as HistoryEvent),
      'a wait, then the step again',
    );

    // Every record the partner has for the key, stored once; no dead letter; the breaker closed by the trial.
    const stored = await db.prisma.fetchedRecord.findMany({
      where: { sourceId: SOURCE },
      select: { externalId: true },
      orderBy: { externalId: 'asc' },
    });
    const partnerIds = Array.from({ length: RECORDS }, (_, i) => makeRecord(SOURCE, DATE, i + 1).id);
    assert.deepEqual(
      stored.map((r) => r.externalId),
      partnerIds,
    );
    const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: SOURCE } });
    assert.equal(run.status, 'succeeded');
    assert.equal(await db.prisma.deadLetter.count(), 0, 'no dead letter');
    const breaker = await db.prisma.breaker.findUniqueOrThrow({ where: { downstream: DS } });
    assert.deepEqual([breaker.state, breaker.reason], ['closed', 'a trial call succeeded']);
  });
});
