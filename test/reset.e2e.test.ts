// Web UI Reset (the ResetWorkflowExecution call the UI makes, here through the pinned Temporal
// CLI) of runs in a real `durable-fetch worker` process: past the downstream call, while it is in
// flight, during a page fetch, of a succeeded run, and to the last workflow task. A reset starts a
// new execution of the same business key; it must adopt or settle what the earlier one did —
// never a second submission, nothing voided that was right, no dead letter. The partner's store
// and ledger are the judge.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { startFetch } from '../client/start-fetch.ts';
import { createSource } from './helpers/deps.ts';
import { localActivityType } from './helpers/history-steps.ts';
import { waitFor } from './helpers/outbox.ts';
import { within } from './helpers/process.ts';
import { temporalAddress } from './helpers/temporal.ts';
import { useWorkerStack } from './helpers/worker-stack.ts';

const DATE = '2026-06-06';
const RECORDS = 120;

const stack = useWorkerStack({
  name: 'reset',
  records: RECORDS,
  env: {
    HTTP_CONNECT_TIMEOUT_MS: '1000',
    HTTP_RESPONSE_TIMEOUT_MS: '2000',
  },
});

const referenceOf = (sourceId: string, round: number) =>
  `fetch-records:${sourceId}:${DATE}:submit-summary:r${round}`;

async function submittingSource(sourceId: string, extra: { localFetch?: boolean } = {}): Promise<void> {
  // The partner applies a submission within 2 s of receiving it, or never.
  await createSource(stack.db.prisma, sourceId, stack.partner.url, {
    pageSize: 50,
    submitSummary: true,
    submitMaxProcessingMs: 2_000,
    ...extra,
  });
}

async function start(sourceId: string) {
  const started = await startFetch(
    {
      temporal: stack.client,
      prisma: stack.db.prisma,
      taskQueue: stack.taskQueue,
      now: () => new Date('2026-11-29T12:00:00Z'),
    },
    { sourceId, date: DATE, requestedBy: 'test' },
  );
  return started.workflowId;
}

/**
 * What the Web UI's Reset does, through the CLI an operator would use: to the first or last
 * workflow task, or to a given WorkflowTaskCompleted event.
 */
async function reset(
  workflowId: string,
  to: 'FirstWorkflowTask' | 'LastWorkflowTask' | number,
): Promise<void> {
  const cli = process.env.DF_TEST_TEMPORAL_CLI;
  assert.ok(cli, 'test/run.ts sets DF_TEST_TEMPORAL_CLI');
  await promisify(execFile)(cli, [
    'workflow',
    'reset',
    '--workflow-id',
    workflowId,
    ...(typeof to === 'number' ? ['--event-id', String(to)] : ['--type', to]),
    '--reason',
    'operator reset (test)',
    '--address',
    temporalAddress(),
  ]);
}

/** Waits until the partner holds (has taken up) the fault set on the source's first reference. */
async function heldAtPartner(sourceId: string, what: string): Promise<void> {
  await waitFor(
    () => stack.partner.faults.list().every((f) => f.reference !== referenceOf(sourceId, 1)),
    what,
    60_000,
  );
}

/**
 * Holds every confirm call of the source's first claim until {@link release}: a reset then lands
 * while the run confirms however long the reset takes. (One 8 s hold of one call left a window of
 * about 3 s: the client gives up at 2 s and its retry goes through, so on a busy machine the run
 * could succeed before the reset landed.)
 */
function holdConfirms(sourceId: string): string {
  return stack.partner.faults.add({
    route: 'submissions',
    action: 'confirm',
    reference: referenceOf(sourceId, 1),
    kind: 'delay',
    delayMs: 8_000,
    times: 1_000,
  });
}

/** Waits for the partner to hold a call under fault `id`. */
async function holding(id: string, what: string): Promise<void> {
  await waitFor(() => (stack.partner.faults.list().find((f) => f.id === id)?.seen ?? 0) > 0, what, 60_000);
}

const release = (id: string) => stack.partner.faults.remove(id);

/** The result of the key's latest execution (the one a reset started). */
async function latestResult(workflowId: string) {
  const handle = stack.client.workflow.getHandle(workflowId);
  return within(handle.result() as Promise<{ status: string }>, 120_000, () => stack.worker.output());
}

/** Submit requests that created a submission, under any round's reference of the source. */
function submitEffects(sourceId: string): number {
  return stack.partner.ledger
    .entries({ action: 'submit' })
    .filter((e) => e.effect && e.reference?.startsWith(`fetch-records:${sourceId}:`)).length;
}

function liveAtPartner(sourceId: string) {
  return stack.partner.submissions
    .list()
    .filter((s) => s.reference.startsWith(`fetch-records:${sourceId}:`) && s.status !== 'voided');
}

async function runOf(sourceId: string) {
  return stack.db.prisma.fetchRun.findFirstOrThrow({
    where: { sourceId },
    include: { downstreamActions: true, deadLetters: true },
  });
}

describe('reset', { concurrency: true }, () => {
  it('a reset while the run is held in its confirm call: the new execution adopts the submission; one live, confirmed, no dead letter', async () => {
    const sourceId = 'reset-confirm';
    await submittingSource(sourceId);
    const hold = holdConfirms(sourceId);
    const workflowId = await start(sourceId);
    await holding(hold, 'the partner holding the confirm call');
    await reset(workflowId, 'FirstWorkflowTask');
    release(hold);
    assert.equal((await latestResult(workflowId)).status, 'succeeded');

    assert.equal(submitEffects(sourceId), 1, 'one submission, never a second');
    assert.deepEqual(
      liveAtPartner(sourceId).map((s) => [s.reference, s.status]),
      [[referenceOf(sourceId, 1), 'confirmed']],
    );
    const run = await runOf(sourceId);
    assert.deepEqual([run.status, run.attempt, run.deadLetters.length], ['succeeded', 2, 0]);
    assert.deepEqual(
      run.downstreamActions.map((a) => [a.reference, a.round, a.state, a.partnerState]),
      [[referenceOf(sourceId, 1), 2, 'confirmed', 'confirmed']],
      'the second claim owns the first claim’s submission',
    );
  });

  it('a reset while the submit call itself is in flight: the earlier call is settled after its window, then exactly one submission', async () => {
    const sourceId = 'reset-submit';
    await submittingSource(sourceId);
    // The partner holds the first submit longer than the client waits: it never takes effect.
    stack.partner.faults.add({
      route: 'submissions',
      action: 'submit',
      reference: referenceOf(sourceId, 1),
      kind: 'delay',
      delayMs: 6_000,
    });
    const workflowId = await start(sourceId);
    await heldAtPartner(sourceId, 'the partner holding the submit call');
    await reset(workflowId, 'FirstWorkflowTask');
    assert.equal((await latestResult(workflowId)).status, 'succeeded');

    assert.equal(submitEffects(sourceId), 1);
    assert.deepEqual(
      liveAtPartner(sourceId).map((s) => [s.reference, s.status]),
      [[referenceOf(sourceId, 2), 'confirmed']],
    );
    const run = await runOf(sourceId);
    assert.deepEqual([run.status, run.deadLetters.length], ['succeeded', 0]);
    assert.deepEqual(
      run.downstreamActions.map((a) => [a.reference, a.state]).sort(),
      [
        [referenceOf(sourceId, 1), 'not_applied'],
        [referenceOf(sourceId, 2), 'confirmed'],
      ],
      'the earlier call settled as not applied, no row left unknown',
    );
  });

  it('a reset to just before the intent while the submit is in flight (a late effect follows): the call counted by the earlier execution is looked up first, never repeated blindly', async () => {
    const sourceId = 'reset-intent';
    // The held call takes effect 4 s after it was received, though its client gave up at 2 s; the
    // partner declares 5 s of processing. Its page fetches are activity tasks: local ones (the
    // default) make the claim, the pages and the intent one workflow task, with no reset point
    // between the claim and the intent.
    await createSource(stack.db.prisma, sourceId, stack.partner.url, {
      pageSize: 50,
      submitSummary: true,
      submitMaxProcessingMs: 5_000,
      localFetch: false,
    });
    stack.partner.faults.add({
      route: 'submissions',
      action: 'submit',
      reference: referenceOf(sourceId, 1),
      kind: 'delay',
      delayMs: 4_000,
      lateEffectMs: 10_000,
    });
    const workflowId = await start(sourceId);
    await heldAtPartner(sourceId, 'the partner holding the submit call');
    // The workflow task that scheduled the intent: the new execution keeps the claim (same round,
    // same token) and writes the intent again, finding the call counted on it.
    const events = (await stack.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    // A local activity (workflows/db-steps.ts): its marker names it.
    const intentAt = events.findIndex((e) => localActivityType(e) === 'recordDownstreamIntent');
    assert.ok(intentAt > 0, 'the intent is in the history');
    const before = events
      .slice(0, intentAt)
      .reverse()
      .find((e) => e.workflowTaskCompletedEventAttributes);
    assert.ok(before?.eventId, 'the workflow task before the intent');
    await reset(workflowId, Number(before.eventId));
    assert.equal((await latestResult(workflowId)).status, 'succeeded');

    assert.equal(submitEffects(sourceId), 1, 'the late effect adopted; no second call');
    assert.deepEqual(
      liveAtPartner(sourceId).map((s) => [s.reference, s.status]),
      [[referenceOf(sourceId, 1), 'confirmed']],
    );
    const run = await runOf(sourceId);
    assert.deepEqual([run.status, run.attempt, run.deadLetters.length], ['succeeded', 1, 0]);
    assert.deepEqual(
      run.downstreamActions.map((a) => [a.round, a.attempts, a.state]),
      [[1, 1, 'confirmed']],
    );
  });

  it('a reset during a page fetch: the run goes on from its stored pages; each record stored once', async () => {
    const sourceId = 'reset-page';
    await createSource(stack.db.prisma, sourceId, stack.partner.url, { pageSize: 50 });
    stack.partner.faults.add({ sourceId, kind: 'delay', delayMs: 5_000, afterRequests: 1 });
    const workflowId = await start(sourceId);
    await waitFor(
      () => stack.partner.faults.list().every((f) => f.sourceId !== sourceId),
      'the second page held',
      60_000,
    );
    await reset(workflowId, 'FirstWorkflowTask');
    assert.equal((await latestResult(workflowId)).status, 'succeeded');
    const run = await runOf(sourceId);
    assert.deepEqual([run.status, run.recordsStored, run.deadLetters.length], ['succeeded', RECORDS, 0]);
    assert.equal(await stack.db.prisma.fetchedRecord.count({ where: { sourceId } }), RECORDS);
    assert.equal(await stack.db.prisma.outboxEvent.count({ where: { aggregateId: run.id } }), 3 + 1);
  });

  it('a reset of a succeeded run changes nothing: no new submission, no new event', async () => {
    const sourceId = 'reset-done';
    await submittingSource(sourceId);
    const workflowId = await start(sourceId);
    assert.equal((await latestResult(workflowId)).status, 'succeeded');
    const { id } = await runOf(sourceId);
    const events = await stack.db.prisma.outboxEvent.count({ where: { aggregateId: id } });
    await reset(workflowId, 'FirstWorkflowTask');
    assert.equal((await latestResult(workflowId)).status, 'succeeded');
    assert.equal(submitEffects(sourceId), 1);
    assert.equal(liveAtPartner(sourceId).length, 1);
    assert.equal(await stack.db.prisma.outboxEvent.count({ where: { aggregateId: id } }), events);
    const run = await runOf(sourceId);
    assert.deepEqual([run.status, run.deadLetters.length], ['succeeded', 0]);
  });

  for (const [path, extra] of [
    ['its confirm an activity task', { localFetch: false }],
    ['its confirm a local activity (the default)', {}],
  ] as const) {
    it(`a reset to the last workflow task while confirming, ${path}: the row names the execution that owns the run now`, async () => {
      const sourceId = `reset-last${extra.localFetch === false ? '-task' : ''}`;
      await submittingSource(sourceId, extra);
      const hold = holdConfirms(sourceId);
      const workflowId = await start(sourceId);
      const first = (await stack.client.workflow.getHandle(workflowId).describe()).runId;
      await holding(hold, 'the partner holding the confirm call');
      await reset(workflowId, 'LastWorkflowTask');
      release(hold);
      assert.equal((await latestResult(workflowId)).status, 'succeeded');
      const latest = (await stack.client.workflow.getHandle(workflowId).describe()).runId;
      assert.notEqual(latest, first);
      const run = await runOf(sourceId);
      assert.deepEqual([run.status, run.workflowRunId], ['succeeded', latest]);
      // The last workflow task an activity-task confirm leaves is the one that scheduled it, after
      // the claim: the claim holds (attempt 1). A local confirm runs in the task after the submit,
      // which is not complete while the call is held (unless the SDK extended it, every 8 s): the
      // last one is then the run's first, with the claim in it, and the reset claims again
      // (attempt 2), adopting the confirmed submission of the first claim.
      if (extra.localFetch === false) assert.equal(run.attempt, 1);
      else assert.ok([1, 2].includes(run.attempt), `attempt ${run.attempt}`);
      assert.equal(submitEffects(sourceId), 1);
      assert.deepEqual(
        liveAtPartner(sourceId).map((s) => s.status),
        ['confirmed'],
      );
    });
  }
});
