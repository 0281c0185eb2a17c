// R8's shared circuit breaker and retry budget (db/retry/breaker.ts) on real PostgreSQL: the state
// machine closed → open → half-open → closed/open, the trial bound, an operator's override, and
// the budget's bound on retries, each asserted on the rows every worker reads.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CancelledFailure } from '@temporalio/activity';
import { settledCall } from '../activities/retry/breaker-guard.ts';
import { failure } from '../activities/errors.ts';
import { localFetchStopped } from '../activities/pages/local-stop.ts';
import { admitCall, recordFailure, recordTrial, setBreaker } from '../db/retry/breaker.ts';
import { readBreakers } from '../db/retry/breaker-views.ts';
import {
  breakerScope,
  defaultSettings,
  type DownstreamSettings,
  downstreamSettingsSchema,
  findDownstream,
  rowOf,
} from '../db/ledger/downstreams.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { testDeps } from './helpers/deps.ts';

let db: TestDatabase;
before(async () => {
  db = await useTestDatabase();
});
after(async () => {
  await db?.drop();
});

let n = 0;
/** A downstream of its own per test, with a small window so that it opens after a few calls. */
function downstream(over: Partial<DownstreamSettings['breaker']> = {}, budget = {}): DownstreamSettings {
  return downstreamSettingsSchema.parse({
    id: `ds-${++n}`,
    breaker: { failureRate: 0.5, minCalls: 4, windowMs: 60_000, openMs: 60_000, trialCalls: 2, ...over },
    retryBudget: { ratio: 0.2, minRetries: 1, windowMs: 60_000, ...budget },
  });
}

async function state(s: DownstreamSettings) {
  const [view] = await readBreakers(db.prisma, [s]);
  assert.ok(view);
  return view;
}

/** `total` first attempts through the breaker, the last `failures` of them failing. */
async function calls(s: DownstreamSettings, total: number, failures: number): Promise<void> {
  for (let i = 0; i < total; i++) {
    const a = await admitCall(db.prisma, s, false);
    assert.equal(a.admitted, true);
    if (i >= total - failures) await recordFailure(db.prisma, s);
  }
}

/** Past the open time of `s` (the counts' window is per second: a close forgets its second too). */
const pastOpen = (s: DownstreamSettings) => new Promise((r) => setTimeout(r, s.breaker.openMs + 50));

void describe('circuit breaker', () => {
  void it('breaker: stays closed below the minimum number of calls, opens at the failure rate once it is reached', async () => {
    const s = downstream();
    await calls(s, 3, 3);
    assert.equal((await state(s)).state, 'closed', '3 failures of 3 calls: under minCalls 4');
    await admitCall(db.prisma, s, false);
    const opened = await recordFailure(db.prisma, s);
    assert.deepEqual(opened, { from: 'closed', to: 'open', reason: '4 of 4 calls failed' });
    const view = await state(s);
    assert.equal(view.state, 'open');
    assert.deepEqual(view.window, { calls: 4, failures: 4, retries: 0 });
  });

  void it('breaker: a failure rate under the threshold keeps it closed', async () => {
    const s = downstream();
    await calls(s, 10, 4);
    assert.equal((await state(s)).state, 'closed');
  });

  void it('breaker: open refuses every call, first attempts too, with the time until half-open', async () => {
    const s = downstream({ openMs: 30_000 });
    await calls(s, 4, 4);
    const refused = await admitCall(db.prisma, s, false);
    assert.equal(refused.admitted, false);
    assert.ok(!refused.admitted && refused.refusal === 'open');
    assert.ok(
      !refused.admitted && refused.waitMs > 25_000 && refused.waitMs <= 30_000,
      'wait until half-open',
    );
    assert.equal((await state(s)).window.calls, 4, 'a refused call is not counted');
  });

  void it('breaker: half-open lets trialCalls trials through, then refuses; a trial success closes it and forgets the old failures', async () => {
    const s = downstream({ openMs: 1_000, trialCalls: 2 });
    await calls(s, 4, 4);
    await pastOpen(s);
    const trials = [await admitCall(db.prisma, s, false), await admitCall(db.prisma, s, false)];
    assert.deepEqual(trials, [
      { admitted: true, trial: true },
      { admitted: true, trial: true },
    ]);
    const third = await admitCall(db.prisma, s, false);
    assert.ok(!third.admitted && third.refusal === 'trials_busy');
    assert.equal((await state(s)).state, 'half_open');
    assert.deepEqual(await recordTrial(db.prisma, s, true), {
      from: 'half_open',
      to: 'closed',
      reason: 'a trial call succeeded',
    });
    assert.equal(await recordTrial(db.prisma, s, false), undefined, 'only the first outcome acts');
    const closed = await state(s);
    assert.equal(closed.state, 'closed');
    assert.equal(closed.window.failures, 0, 'failures before it closed no longer count');
    // One more failure does not re-open it: the window starts again from the close.
    await new Promise((r) => setTimeout(r, 1_000));
    await calls(s, 1, 1);
    assert.deepEqual((await state(s)).window, { calls: 1, failures: 1, retries: 0 });
    assert.equal((await state(s)).state, 'closed');
  });

  void it('breaker: a failed trial opens it again for the open time', async () => {
    const s = downstream({ openMs: 1_000, trialCalls: 1 });
    await calls(s, 4, 4);
    await pastOpen(s);
    assert.deepEqual(await admitCall(db.prisma, s, false), { admitted: true, trial: true });
    assert.equal((await recordTrial(db.prisma, s, false))?.to, 'open');
    const refused = await admitCall(db.prisma, s, false);
    assert.ok(!refused.admitted && refused.refusal === 'open');
  });

  void it('breaker: a trial our side stopped (a cancel, a stopping worker) neither closes nor re-opens it, and gives its place to the next call; an answer that is not unwell closes it', async () => {
    const s = downstream({ openMs: 1_000, trialCalls: 1 });
    await calls(s, 4, 4);
    await pastOpen(s);
    const deps = testDeps(db.prisma);
    for (const stopped of [localFetchStopped(), new CancelledFailure('cancelled')]) {
      // The one trial place: taken by this call, free again once it is stopped.
      assert.deepEqual(await admitCall(db.prisma, s, false), { admitted: true, trial: true });
      await assert.rejects(
        settledCall(deps, { settings: s, trial: true }, () => Promise.reject(stopped)),
        (err) => err === stopped,
      );
      assert.equal((await state(s)).state, 'half_open', `after ${stopped.message}`);
    }
    assert.deepEqual(await admitCall(db.prisma, s, false), { admitted: true, trial: true });
    const invalid = failure('InvalidResponse', 'SCHEMA', 'a page off the contract');
    await assert.rejects(settledCall(deps, { settings: s, trial: true }, () => Promise.reject(invalid)));
    assert.equal((await state(s)).state, 'closed', 'the partner answered: it is up');
  });

  void it('breaker: concurrent admissions at half-open let exactly trialCalls through (the row lock settles them)', async () => {
    // Open time long enough that no trial goes stale (and frees its place) while they race.
    const s = downstream({ openMs: 5_000, trialCalls: 3 });
    await calls(s, 4, 4);
    await pastOpen(s);
    const all = await Promise.all(Array.from({ length: 12 }, () => admitCall(db.prisma, s, false)));
    assert.equal(all.filter((a) => a.admitted).length, 3);
  });

  void it('breaker: forced open by an operator refuses calls until an operator closes it, and closing forgets the window', async () => {
    const s = downstream({ openMs: 100 });
    const before = await setBreaker(db.prisma, s.id, 'open', {
      actor: 'alice',
      reason: 'partner maintenance',
    });
    assert.deepEqual(before, { state: 'closed', forced: false });
    await new Promise((r) => setTimeout(r, 150));
    const refused = await admitCall(db.prisma, s, false);
    assert.ok(!refused.admitted && refused.refusal === 'forced_open', 'no half-open while forced');
    const view = await state(s);
    assert.equal(view.forced, true);
    assert.equal(view.changedBy, 'alice');
    assert.equal(view.reason, 'partner maintenance');
    assert.deepEqual(await setBreaker(db.prisma, s.id, 'closed', { actor: 'bob', reason: 'back' }), {
      state: 'open',
      forced: true,
    });
    assert.deepEqual(await admitCall(db.prisma, s, false), { admitted: true, trial: false });
  });
});

void describe('retry budget', () => {
  void it('retry budget: retries go out while within max(minRetries, ratio × calls), then wait; first attempts always go', async () => {
    const s = downstream({ minCalls: 1_000 }, { ratio: 0.2, minRetries: 2 });
    const retries = [];
    for (let i = 0; i < 5; i++) retries.push((await admitCall(db.prisma, s, true)).admitted);
    // 1st: 1 ≤ max(2, 0.2); 2nd: 2 ≤ max(2, 0.4); 3rd: 3 > max(2, 0.6).
    assert.deepEqual(retries, [true, true, false, false, false]);
    const refused = await admitCall(db.prisma, s, true);
    assert.ok(!refused.admitted && refused.refusal === 'retry_budget' && refused.waitMs >= 1_000);
    await calls(s, 18, 0);
    // 20 calls, 2 retries: a third retry makes 3 of 21 calls, 0.2 × 21 = 4.2.
    assert.equal((await admitCall(db.prisma, s, true)).admitted, true);
    assert.deepEqual((await state(s)).window, { calls: 21, failures: 0, retries: 3 });
  });

  void it('retry budget: retries asking at the same moment are admitted one at a time, within the budget', async () => {
    // Retries refused together wait alike and come back together: a wave.
    for (let round = 0; round < 3; round++) {
      const s = downstream({ minCalls: 1_000 }, { ratio: 0.2, minRetries: 2 });
      const wave = await Promise.all(Array.from({ length: 20 }, () => admitCall(db.prisma, s, true)));
      assert.equal(wave.filter((a) => a.admitted).length, 2, `round ${round}`);
      assert.deepEqual((await state(s)).window, { calls: 2, failures: 0, retries: 2 });
    }
  });

  void it('retry budget: its floor lets retries through with no first attempt in the window (after an outage, all are retries)', async () => {
    const s = downstream({}, { ratio: 0.2, minRetries: 1 });
    assert.deepEqual(await admitCall(db.prisma, s, true), { admitted: true, trial: false });
    const a = await admitCall(db.prisma, s, true);
    assert.ok(!a.admitted && a.refusal === 'retry_budget');
    assert.throws(
      () => downstreamSettingsSchema.parse({ id: 'x', retryBudget: { minRetries: 0 } }),
      /at least 1/,
    );
  });
});

void describe('downstream settings in the database', () => {
  void it('settings: a row changed by SQL to an impossible setting fails its read, naming the setting, rather than running on it', async () => {
    const s = downstream();
    await db.prisma.downstream.create({ data: { id: s.id, ...rowOf(s) } });
    assert.equal((await findDownstream(db.prisma, s.id)).breaker.minCalls, 4);
    await db.prisma.$executeRaw`UPDATE downstream SET breaker_failure_rate = 2 WHERE id = ${s.id}`;
    await assert.rejects(findDownstream(db.prisma, s.id), {
      message: `downstream '${s.id}' in the database: breaker.failureRate: must be at most 1 (a share of the calls)`,
    });
  });
});

void describe('breaker scope', () => {
  void it('scope: sources that name no downstream get a breaker each (default.<source>), named downstreams share theirs', () => {
    assert.equal(breakerScope(defaultSettings('default'), 'acme').id, 'default.acme');
    assert.equal(breakerScope(defaultSettings('default'), 'other').id, 'default.other');
    assert.equal(breakerScope(defaultSettings('acme-api'), 'acme').id, 'acme-api');
  });
});
