// The downstream confirm of a source with local page fetches (a new source's default) runs as a
// local activity too, beside its non-idempotent submit, which stays an activity task. What the
// confirm guarantees as a task must hold all the same (R4, R7, R9): one submission at the
// partner, confirmed; a 503 retried; a worker killed or stopped while the partner holds the
// confirm, taken over by another worker that confirms the same submission, never submitting
// again. On real processes: `durable-fetch worker`s, the shared Temporal dev server, a cloned
// database and the demo partner, whose submissions and ledger are the judge. Source ids start
// with `lc-`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startFetch, type StartedFetch } from '../client/start-fetch.ts';
import { activityTasks, localAttempts } from './helpers/page-fetches.ts';
import { within } from './helpers/process.ts';
import { createSource } from './helpers/deps.ts';
import { takeOverHeldRun, useWorkerStack } from './helpers/worker-stack.ts';

/** Records per source and date: one partner page. */
const RECORDS = 50;
/** Longer than any test: a held partner call ends only when its client stops it. */
const HOLD_MS = 300_000;

const stack = useWorkerStack({
  name: 'local-confirm',
  records: RECORDS,
  env: { HTTP_RESPONSE_TIMEOUT_MS: String(HOLD_MS) },
});

const submittingSource = (id: string) =>
  createSource(stack.db.prisma, id, stack.partner.url, { pageSize: 50, submitSummary: true });

const referenceOf = (sourceId: string, date: string) => `fetch-records:${sourceId}:${date}:submit-summary:r1`;

const start = (sourceId: string, date: string, taskQueue = stack.taskQueue): Promise<StartedFetch> =>
  startFetch(
    { temporal: stack.client, prisma: stack.db.prisma, taskQueue },
    { sourceId, date, requestedBy: 'test' },
  );

/**
 * How the run's downstream step ran, by its history: submit and confirm activity tasks scheduled,
 * the confirm's local attempts (each with its failure type, if it failed, and whether its retry
 * waits on a durable timer), timed-out workflow tasks.
 */
async function stepOf(workflowId: string) {
  const events = (await stack.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  return {
    submitTasks: activityTasks(events, 'submitSummary'),
    confirmTasks: activityTasks(events, 'confirmSubmission'),
    localConfirms: localAttempts(events, 'confirmSubmission'),
    workflowTasksTimedOut: events.filter((e) => e.workflowTaskTimedOutEventAttributes).length,
  };
}

/**
 * What the partner holds for the run's reference: its submissions (each one's status), the submit
 * calls that took effect, and the confirm calls it answered, in order (status, fault).
 */
function atPartner(sourceId: string, date: string) {
  const reference = referenceOf(sourceId, date);
  return {
    submissions: stack.partner.submissions.byReference(reference).map((s) => s.status),
    submitEffects: stack.partner.ledger.entries({ action: 'submit', reference }).filter((e) => e.effect)
      .length,
    confirms: stack.partner.ledger
      .entries({ action: 'confirm', reference })
      .sort((a, b) => a.seq - b.seq)
      .map((e) => [e.status, e.fault ?? null]),
  };
}

/** The run's row, its ledger action and its records. */
async function rowsOf(sourceId: string, date: string) {
  const businessDate = new Date(`${date}T00:00:00Z`);
  const run = await stack.db.prisma.fetchRun.findFirstOrThrow({
    where: { sourceId, businessDate },
    include: { downstreamActions: true },
  });
  const records = await stack.db.prisma.fetchedRecord.count({ where: { sourceId, businessDate } });
  return {
    status: run.status,
    records,
    actions: run.downstreamActions.map((a) => [a.state, a.attempts]),
  };
}

describe('local downstream confirms', { timeout: 240_000 }, () => {
  it("a local-fetch source's confirm is a local activity, its submit an activity task; a 503 on the confirm is retried in the worker: one submission, confirmed", async () => {
    const source = 'lc-retried';
    const date = '2026-06-01';
    await submittingSource(source);
    stack.partner.faults.add({
      route: 'submissions',
      action: 'confirm',
      reference: referenceOf(source, date),
      kind: 'status',
      status: 503,
    });
    const run = await start(source, date);
    const result = await within(run.handle.result(), 120_000, () => stack.worker.output());

    assert.equal(result.status, 'succeeded');
    assert.deepEqual(await rowsOf(source, date), {
      status: 'succeeded',
      records: RECORDS,
      actions: [['confirmed', 1]],
    });
    assert.deepEqual(atPartner(source, date), {
      submissions: ['confirmed'],
      submitEffects: 1,
      confirms: [
        [503, 'status'],
        [200, null],
      ],
    });
    // The SDK retried the confirm inside the worker (a 1 s wait, below the local retry threshold):
    // one marker, for the attempt that succeeded.
    assert.deepEqual(await stepOf(run.workflowId), {
      submitTasks: 1,
      confirmTasks: 0,
      localConfirms: [{ attempt: 2, failureType: null, timer: false }],
      workflowTasksTimedOut: 0,
    });
  });

  it('a worker killed while the partner holds its local confirm: another worker confirms the same submission, never submitting again', async () => {
    const { step, partner } = await takenOver('lc-killed', '2026-06-02', 'SIGKILL');
    assert.ok(step.workflowTasksTimedOut >= 1, 'the killed worker’s workflow task timed out');
    assert.deepEqual(
      step.localConfirms.map((c) => c.failureType),
      [null],
      'the history records the confirm that succeeded, on the second worker',
    );
    // The killed worker's held call: the partner saw its client leave.
    assert.deepEqual(partner.confirms, [
      [499, 'client_closed'],
      [200, null],
    ]);
  });

  it('a worker stopped (SIGTERM) while the partner holds its local confirm: it stops the call when the grace time is over and exits; another worker confirms after a timer', async () => {
    const { step, partner, stopped } = await takenOver('lc-stopped', '2026-06-03', 'SIGTERM');
    // Stopped by the grace time (1 s), not by the held call (5 min) or the attempt's timeout (30 s).
    assert.deepEqual(stopped.exit, { code: 0, signal: null }, stopped.output);
    assert.ok(stopped.ms < 25_000, `the worker stopped ${stopped.ms} ms after SIGTERM`);
    assert.equal(step.workflowTasksTimedOut, 0, 'the stopping worker completed its workflow task');
    // The first attempt failed as WorkerShutdown and waited on a durable timer (the stopping
    // worker did not retry it); the second ran on the other worker.
    assert.deepEqual(step.localConfirms, [
      { attempt: 1, failureType: 'WorkerShutdown', timer: true },
      { attempt: 2, failureType: null, timer: false },
    ]);
    assert.deepEqual(partner.confirms, [
      [499, 'client_closed'],
      [200, null],
    ]);
  });
});

/**
 * A run of a new source with its downstream step whose first worker gets `signal` while the
 * partner holds the confirm, then a second worker on the same queue. Asserts what holds either
 * way: the run succeeded, its records stored once, one submission at the partner, confirmed, the
 * submit an activity task and the confirm never one. Returns the run's step, what the partner
 * holds and how the first worker stopped.
 */
async function takenOver(source: string, date: string, signal: 'SIGKILL' | 'SIGTERM') {
  await submittingSource(source);
  const reference = referenceOf(source, date);
  const { result, stopped, workflowId } = await takeOverHeldRun(stack, {
    name: `local-confirm-${source}`,
    holdMs: HOLD_MS,
    signal,
    start: (taskQueue) => {
      // Held past the test: the first worker is inside the confirm's call when it gets the signal.
      stack.partner.faults.add({
        route: 'submissions',
        action: 'confirm',
        reference,
        kind: 'delay',
        delayMs: HOLD_MS,
      });
      return start(source, date, taskQueue);
    },
    held: () => stack.partner.faults.list().every((f) => f.reference !== reference),
  });

  assert.equal(result.status, 'succeeded');
  assert.deepEqual(await rowsOf(source, date), {
    status: 'succeeded',
    records: RECORDS,
    actions: [['confirmed', 1]],
  });
  const partner = atPartner(source, date);
  assert.deepEqual([partner.submissions, partner.submitEffects], [['confirmed'], 1]);
  const step = await stepOf(workflowId);
  assert.deepEqual([step.submitTasks, step.confirmTasks], [1, 0], 'the submit a task, the confirm local');
  return { step, partner, stopped };
}
