// R7/R8: a partner call the breaker let through that fails while the breaker holds the partner as
// down ends its attempt as CircuitOpen, as a refused call does, so that a step's last attempt
// meeting an outage is outlasted whichever came last; and R8's budget counts as retries only calls
// that repeat one an earlier attempt asked for. The decisions are pure (heldBackFailure,
// firstCallIsRetry); settledCall is checked on real PostgreSQL, on the breaker rows every worker reads.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/activity';
import {
  firstCallIsRetry,
  heldBackFailure,
  rememberLocalAsked,
  settledCall,
} from '../activities/retry/breaker-guard.ts';
import { detailsOf, failure } from '../activities/errors.ts';
import { admitCall, readHold, recordFailure, setBreaker } from '../db/retry/breaker.ts';
import { type DownstreamSettings, downstreamSettingsSchema } from '../db/ledger/downstreams.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { testDeps } from './helpers/deps.ts';

const OPEN_MS = 8_000;
let n = 0;
/** A downstream of its own per test: opens at half of 4 calls, for 8 s, one trial at a time. */
const downstream = (): DownstreamSettings =>
  downstreamSettingsSchema.parse({
    id: `hb-${++n}`,
    breaker: { failureRate: 0.5, minCalls: 4, windowMs: 60_000, openMs: OPEN_MS, trialCalls: 1 },
  });

const down = () =>
  failure('UpstreamUnavailable', 'HTTP_503', 'partner p page: HTTP 503 (partner says: maintenance)');
const closed = { state: 'closed', forced: false, waitMs: 0 } as const;
const noSpread = () => 0;

/** The type, code and wait of what a call's failure became. */
function outcome(err: unknown) {
  assert.ok(err instanceof ApplicationFailure, String(err));
  return { type: err.type, code: detailsOf(err)?.code, retryAfterMs: detailsOf(err)?.retryAfterMs };
}

void describe('a failed call the breaker holds back (pure)', () => {
  void it('held-back: a call that was no trial, failing with the breaker still closed, keeps the partner failure', () => {
    const partner = down();
    assert.equal(heldBackFailure(partner, false, closed, downstream()), partner);
  });

  void it('held-back: a failure after which the breaker is open is CircuitOpen FAILED_BREAKER_OPEN, waiting until half-open, the partner words kept', () => {
    const s = downstream();
    const held = heldBackFailure(down(), false, { state: 'open', forced: false, waitMs: 5_000 }, s, noSpread);
    assert.deepEqual(outcome(held), {
      type: 'CircuitOpen',
      code: 'FAILED_BREAKER_OPEN',
      retryAfterMs: 5_000,
    });
    assert.equal(held.nonRetryable, false, 'retried within the preset, run again by the workflow at its end');
    assert.match(held.message, /HTTP 503 \(partner says: maintenance\) \(UpstreamUnavailable\)/);
    assert.match(held.message, new RegExp(`its circuit breaker is open \\(downstream ${s.id}\\)`));
  });

  void it('held-back: a failed trial is CircuitOpen TRIAL_FAILED, even when another trial closed the breaker meanwhile', () => {
    const s = downstream();
    const reopened = heldBackFailure(
      down(),
      true,
      { state: 'open', forced: false, waitMs: OPEN_MS },
      s,
      noSpread,
    );
    assert.deepEqual(outcome(reopened), { type: 'CircuitOpen', code: 'TRIAL_FAILED', retryAfterMs: OPEN_MS });
    // Closed by another trial's success: a quarter of the open time, as a refusal while trials are out.
    const afterClose = heldBackFailure(down(), true, closed, s, noSpread);
    assert.deepEqual(outcome(afterClose), {
      type: 'CircuitOpen',
      code: 'TRIAL_FAILED',
      retryAfterMs: OPEN_MS / 4,
    });
  });

  void it("held-back: the wait is spread as a refusal's (up to half more), and never shorter than the partner's Retry-After", () => {
    const s = downstream();
    const open = { state: 'open', forced: false, waitMs: 4_000 } as const;
    assert.equal(outcome(heldBackFailure(down(), false, open, s, () => 1)).retryAfterMs, 6_000);
    const limited = failure('RateLimited', 'HTTP_429', 'partner p page: HTTP 429', { retryAfterMs: 20_000 });
    assert.equal(outcome(heldBackFailure(limited, false, open, s, noSpread)).retryAfterMs, 20_000);
  });
});

void describe('which first call is a retry (pure)', () => {
  const info = (attempt: number, heartbeatDetails: unknown, isLocal = false) => ({
    attempt,
    heartbeatDetails,
    isLocal,
  });

  void it('retry flag: a first attempt, or one after attempts that never asked the partner (failed on our database), is no retry', () => {
    assert.equal(firstCallIsRetry(info(1, undefined)), false);
    assert.equal(firstCallIsRetry(info(1, { partnerAsked: true })), false);
    assert.equal(firstCallIsRetry(info(2, undefined)), false, 'no earlier attempt heartbeated');
    assert.equal(
      firstCallIsRetry(info(3, { pageNo: 0, cursor: null, recordCount: 0, partnerAsked: false })),
      false,
    );
  });

  void it('retry flag: an attempt after one that asked the partner (let through or refused) and got no answer is a retry', () => {
    assert.equal(
      firstCallIsRetry(info(2, { pageNo: 0, cursor: 'c', recordCount: 50, partnerAsked: true })),
      true,
    );
  });

  void it('retry flag: without the flag to go by (a local attempt whose last ran elsewhere, details of an older build) every later attempt counts, as before', () => {
    assert.equal(firstCallIsRetry(info(2, undefined, true)), true);
    assert.equal(firstCallIsRetry(info(2, { pageNo: 0, cursor: null, recordCount: 0 })), true);
  });

  void it('retry flag: a local attempt goes by what its last attempt left in this worker, by execution and activity id', () => {
    const step = (runId: string, attempt: number) => ({
      attempt,
      heartbeatDetails: undefined,
      isLocal: true,
      workflowExecution: { workflowId: 'fetch/x', runId },
      activityId: '4',
    });
    rememberLocalAsked(step('run-a', 1), false); // failed on our database before asking
    rememberLocalAsked(step('run-b', 1), true); // asked, no answer staged
    assert.equal(firstCallIsRetry(step('run-a', 2)), false);
    assert.equal(firstCallIsRetry(step('run-b', 2)), true);
    assert.equal(firstCallIsRetry(step('run-c', 2)), true, 'nothing left here: counted');
    rememberLocalAsked(step('run-a', 2), undefined); // the step succeeded
    assert.equal(firstCallIsRetry(step('run-a', 3)), true, 'forgotten');
  });
});

void describe('settledCall with the shared breaker (PostgreSQL)', () => {
  let db: TestDatabase;
  before(async () => {
    db = await useTestDatabase();
  });
  after(async () => {
    await db?.drop();
  });

  /** `total` first attempts through the breaker, all failing: opens it (at least minCalls). */
  async function openIt(s: DownstreamSettings): Promise<void> {
    for (let i = 0; i < s.breaker.minCalls; i++) {
      assert.equal((await admitCall(db.prisma, s, false)).admitted, true);
      await recordFailure(db.prisma, s);
    }
  }

  void it('settled call: an unwell failure on a closed breaker that stays closed is thrown as the partner failure', async () => {
    const s = downstream();
    const partner = down();
    await admitCall(db.prisma, s, false);
    await assert.rejects(
      settledCall(testDeps(db.prisma), { settings: s, trial: false }, () => Promise.reject(partner)),
      (err) => err === partner,
    );
    assert.deepEqual(await readHold(db.prisma, s), closed);
  });

  void it('settled call: the failure that opens the breaker ends its attempt as CircuitOpen FAILED_BREAKER_OPEN with the open time to wait', async () => {
    const s = downstream();
    for (let i = 0; i < s.breaker.minCalls - 1; i++) {
      await admitCall(db.prisma, s, false);
      await recordFailure(db.prisma, s);
    }
    await admitCall(db.prisma, s, false);
    const err = await settledCall(testDeps(db.prisma), { settings: s, trial: false }, () =>
      Promise.reject(down()),
    ).catch((e: unknown) => e);
    const { type, code, retryAfterMs } = outcome(err);
    assert.deepEqual({ type, code }, { type: 'CircuitOpen', code: 'FAILED_BREAKER_OPEN' });
    // The breaker's remaining open time (≤ OPEN_MS: time passed since it opened), spread by ≤ 1.5.
    assert.ok(
      retryAfterMs !== undefined && retryAfterMs > 0 && retryAfterMs <= OPEN_MS * 1.5,
      `${retryAfterMs}`,
    );
  });

  void it('settled call: a failed half-open trial re-opens the breaker and ends its attempt as CircuitOpen TRIAL_FAILED', async () => {
    const s = downstream();
    await openIt(s);
    // Half-open now: the open time has passed (as the database's clock says).
    await db.prisma.breaker.update({ where: { downstream: s.id }, data: { halfOpenAt: new Date(0) } });
    assert.deepEqual(await admitCall(db.prisma, s, false), { admitted: true, trial: true });
    const err = await settledCall(testDeps(db.prisma), { settings: s, trial: true }, () =>
      Promise.reject(down()),
    ).catch((e: unknown) => e);
    assert.equal(outcome(err).code, 'TRIAL_FAILED');
    const hold = await readHold(db.prisma, s);
    assert.equal(hold.state, 'open', 'the failed trial re-opened it');
    assert.ok(hold.waitMs > 0 && hold.waitMs <= OPEN_MS, `${hold.waitMs}`);
  });

  void it('settled call: a forced-open breaker waits the open time; a failure that is not unwell is never held back', async () => {
    const s = downstream();
    await admitCall(db.prisma, s, false);
    await setBreaker(db.prisma, s.id, 'open', { actor: 'test', reason: 'maintenance' });
    assert.deepEqual(await readHold(db.prisma, s), { state: 'open', forced: true, waitMs: OPEN_MS });
    const invalid = failure('InvalidResponse', 'SCHEMA', 'a page off the contract');
    await assert.rejects(
      settledCall(testDeps(db.prisma), { settings: s, trial: false }, () => Promise.reject(invalid)),
      (err) => err === invalid,
    );
  });
});
