// Activity-level tests of the downstream step's database work on real PostgreSQL (no Temporal
// needed: the confirm runs in a mock activity context, the other steps need none). The intent is written
// once per claim and an earlier claim's open action is handed back to be settled first (R4); the
// confirm and the pause check are fenced by the run's lease (R1, R9) and re-read the source in
// the statement that renews it (R2), so a source disabled after the claim gets no partner call.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../activities/index.ts';
import { firstCallIsRetry } from '../activities/retry/breaker-guard.ts';
import { COMPLETED_UNRECORDED } from '../contract/error-types.ts';
import { SUBMIT_SUMMARY } from '../contract/types.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';

let db: TestDatabase;
let acts: ReturnType<typeof createActivities>;
const DATE = '2026-06-01';

before(async () => {
  db = await useTestDatabase();
  acts = createActivities(testDeps(db.prisma));
});
after(async () => db?.drop());

/** A claimed run of a new source with the downstream step (its partner unreachable: no call may succeed). */
async function claimed(sourceId: string) {
  await createSource(db.prisma, sourceId, 'http://127.0.0.1:1', { submitSummary: true });
  const claim = await acts.claimRun({
    sourceId,
    businessDate: DATE,
    workflowId: `fetch/fetch-records/${sourceId}/${DATE}`,
    workflowRunId: 'run-1',
    correlationId: 'corr-1',
    requestedBy: 'test',
    scheduledAt: `${DATE}T02:00:00Z`,
  });
  if (claim.outcome !== 'claimed') assert.fail(`expected a claim, got ${claim.outcome}`);
  const fence = { fetchRunId: claim.fetchRunId, leaseToken: claim.leaseToken };
  const intent = (round: number, settleEarlier = true) =>
    acts.recordDownstreamIntent({
      ...fence,
      sourceId,
      businessDate: DATE,
      round,
      action: SUBMIT_SUMMARY,
      step: 1,
      settleEarlier,
    });
  return { fence, round: claim.attempt, intent };
}

type ConfirmInput = Parameters<typeof acts.confirmSubmission>[0];

/** The confirm in an activity context of its own (a regular activity's first attempt by default). */
const confirmIn = (input: ConfirmInput, env = new MockActivityEnvironment()) =>
  env.run((i: ConfirmInput) => acts.confirmSubmission(i), input);

/** Rejects with an ApplicationFailure of `type` and `code`. */
async function refused(work: Promise<unknown>, type: string, code: string): Promise<void> {
  await assert.rejects(work, (err: unknown) => {
    assert.ok(err instanceof ApplicationFailure, String(err));
    assert.equal(err.type, type);
    assert.equal((err.details?.[0] as { code?: string } | undefined)?.code, code);
    return true;
  });
}

void describe('the downstream step in the database', () => {
  void it('the intent is written once per claim; a later claim is handed the open action first', async () => {
    const { fence, round, intent } = await claimed('ds-intent');
    const first = await intent(round);
    assert.ok(!('action' in first));
    assert.deepEqual(
      { state: first.state, attempts: first.attempts, partnerId: first.partnerId },
      {
        state: 'attempting',
        attempts: 0,
        partnerId: null,
      },
    );
    assert.deepEqual(await intent(round), first, 'a repeat returns the same row');
    assert.equal(await db.prisma.downstreamAction.count({ where: { fetchRunId: fence.fetchRunId } }), 1);

    assert.deepEqual(await intent(round + 1), { kind: 'earlier', action: first });
    await refused(intent(round + 1, false), 'InvalidInput', 'EARLIER_ACTION_UNSETTLED');
    assert.equal(
      await db.prisma.downstreamAction.count({ where: { fetchRunId: fence.fetchRunId } }),
      1,
      'no second intent while the earlier action is open',
    );
  });

  void it('the confirm is fenced by the lease and refused for a source disabled after the claim', async () => {
    const { fence, round, intent } = await claimed('ds-confirm');
    const action = await intent(round);
    assert.ok(!('action' in action));
    await db.prisma.downstreamAction.update({
      where: { id: action.actionId },
      data: { state: 'confirmed', partnerId: 'p-1' },
    });
    const confirm = { ...fence, sourceId: 'ds-confirm', actionId: action.actionId };
    await refused(
      confirmIn({ ...confirm, leaseToken: '00000000-0000-4000-8000-000000000000' }),
      'LeaseLost',
      'LEASE_LOST',
    );
    await db.prisma.source.update({ where: { id: 'ds-confirm' }, data: { enabled: false } });
    // Refused before any partner call: a call to the unreachable partner would fail otherwise.
    await refused(confirmIn(confirm), 'PermissionDenied', 'SOURCE_DISABLED');
    const row = await db.prisma.downstreamAction.findUniqueOrThrow({ where: { id: action.actionId } });
    assert.equal(row.partnerState, null, 'nothing recorded from a partner');
  });

  void it("a local confirm refused before it asked the partner leaves its next attempt's first call no retry (R8's budget)", async () => {
    const { fence, round, intent } = await claimed('ds-local-confirm');
    const action = await intent(round);
    assert.ok(!('action' in action));
    const confirm = { ...fence, sourceId: 'ds-local-confirm', actionId: action.actionId };
    // A local activity has no heartbeat details: what its attempt leaves is kept in the worker,
    // by execution and activity id, for the retries the SDK runs there.
    const local = (activityId: string, attempt: number) => ({
      isLocal: true,
      attempt,
      heartbeatDetails: undefined,
      activityId,
      workflowExecution: { workflowId: 'wf-ds-local-confirm', runId: 'run-ds-local-confirm' },
    });
    await refused(
      confirmIn(
        { ...confirm, leaseToken: '00000000-0000-4000-8000-000000000000' },
        new MockActivityEnvironment(local('7', 1)),
      ),
      'LeaseLost',
      'LEASE_LOST',
    );
    assert.equal(firstCallIsRetry(local('7', 2)), false, 'attempt 1 asked no one: attempt 2 calls afresh');
    // A local attempt with nothing left for it (its last attempt ran in another worker) counts.
    assert.equal(firstCallIsRetry(local('8', 2)), true);
  });

  void it('the pause check reads the pause and its reason, and is fenced by the lease', async () => {
    const { fence } = await claimed('ds-pause');
    const check = { ...fence, sourceId: 'ds-pause' };
    assert.deepEqual(await acts.checkSourcePause(check), { paused: false, reason: null });
    await db.prisma.source.update({
      where: { id: 'ds-pause' },
      data: { pausedAt: new Date(), pausedReason: 'partner maintenance', pausedBy: 'test' },
    });
    assert.deepEqual(await acts.checkSourcePause(check), { paused: true, reason: 'partner maintenance' });
    await refused(
      acts.checkSourcePause({ ...check, leaseToken: '00000000-0000-4000-8000-000000000000' }),
      'LeaseLost',
      'LEASE_LOST',
    );
  });

  void it('a run whose database lost what its workflow did: the earlier rounds it forgot are looked up first; any other run writes nothing', async () => {
    // An ordinary later claim: a round without a row never called (its intent comes first).
    const plain = await claimed('ds-forgot-plain');
    const own = await plain.intent(plain.round + 2);
    assert.ok(!('action' in own), 'its own intent, no earlier round written back');
    assert.equal(
      await db.prisma.downstreamAction.count({ where: { fetchRunId: plain.fence.fetchRunId } }),
      1,
    );

    // Settled as completed but unrecorded (the database restored to an older point than Temporal).
    const lost = await claimed('ds-forgot-lost');
    await db.prisma.deadLetter.create({
      data: {
        fetchRunId: lost.fence.fetchRunId,
        jobType: 'fetch-records',
        sourceId: 'ds-forgot-lost',
        businessDate: new Date(`${DATE}T00:00:00Z`),
        workflowId: `fetch/fetch-records/ds-forgot-lost/${DATE}`,
        workflowRunId: 'run-0',
        errorType: 'Internal',
        errorCode: COMPLETED_UNRECORDED,
        errorMessage: 'workflow completed but the run was never recorded as succeeded',
        attempts: 1,
        firstFailedAt: new Date(),
        lastFailedAt: new Date(),
      },
    });
    const round = lost.round + 2;
    const first = await lost.intent(round);
    assert.ok('action' in first && first.kind === 'earlier', 'an earlier round is handed back first');
    const rows = await db.prisma.downstreamAction.findMany({
      where: { fetchRunId: lost.fence.fetchRunId },
      orderBy: { round: 'asc' },
    });
    const prefix = `fetch-records:ds-forgot-lost:${DATE}:${SUBMIT_SUMMARY}:r`;
    assert.deepEqual(
      rows.map((r) => [r.round, r.state, r.reference, r.attempts]),
      Array.from({ length: round - 1 }, (_, i) => [i + 1, 'unknown', `${prefix}${i + 1}`, 1]),
      'one row per forgotten round, unknown, under its own reference',
    );
    await lost.intent(round);
    assert.equal(
      await db.prisma.downstreamAction.count({ where: { fetchRunId: lost.fence.fetchRunId } }),
      round - 1,
      'written once',
    );
  });
});
