// Every job has a maximum run time (R9): a source's `maxRunTimeMs`, fixed when the run is claimed
// and carried across continue-as-new. Past it, the run ends `dead_lettered` with DeadlineExceeded
// (code RUN_DEADLINE), what it was waiting on is cancelled, and its downstream effects are
// compensated through the usual path; a run within its time is unaffected. On real processes: a
// `durable-fetch worker`, the shared Temporal dev server, a cloned database and the demo partner,
// whose ledger and submissions are the judge. Source ids start with `rdl-`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { pauseSource } from '../client/sources/index.ts';
import { launchFetch, prepareFetch } from '../client/start-fetch.ts';
import { encodeCursor } from '../partner/records.ts';
import { compensationWorkflowIdFor } from '../contract/business-key.ts';
import { createSource } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { within } from './helpers/process.ts';
import { useWorkerStack } from './helpers/worker-stack.ts';

const DATE = '2026-08-08';
/** Three stored pages of 100 (the partner serves 50 a request: page n starts at seq 100n+1). */
const RECORDS = 300;
/** Longer than the steps before the held call take on a machine at load 20+ (10 s was not), short for a test. */
const MAX_RUN_TIME_MS = 30_000;
/** A held partner call outlasts any run here: only the deadline can end it. */
const HOLD_MS = 300_000;
/**
 * The max run time of the run held in its confirm: shorter than the confirm attempt's own 30 s
 * timeout by more than the deadline's slack (its timer counts from the workflow task that armed
 * it, and reaches a run held in a local confirm at that task's next extension: up to about 8 s
 * each), so that the deadline, not the attempt's timeout and a retry that succeeds, ends it.
 */
const CONFIRM_HELD_MAX_RUN_TIME_MS = 15_000;

const stack = useWorkerStack({
  name: 'deadline',
  records: RECORDS,
  env: {
    // The partner calls would not time out by themselves before the deadline.
    HTTP_RESPONSE_TIMEOUT_MS: String(HOLD_MS),
  },
});

/** Starts the source's run, `pagesPerExecution` pages per workflow execution. */
async function start(sourceId: string, pagesPerExecution?: number) {
  const ctx = { temporal: stack.client, prisma: stack.db.prisma, taskQueue: stack.taskQueue };
  const prepared = await prepareFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' });
  return launchFetch(ctx, {
    ...prepared,
    input: { ...prepared.input, ...(pagesPerExecution ? { pagesPerExecution } : {}) },
  });
}

/** How the workflow ended: its result, or the error `result()` threw. */
async function outcomeOf(workflowId: string): Promise<unknown> {
  const result = stack.client.workflow.getHandle(workflowId).result();
  return within(
    result.catch((e: unknown) => e),
    120_000,
    () => stack.worker.output(),
  );
}

function assertDeadlineExceeded(err: unknown): void {
  assert.ok(err instanceof WorkflowFailedError, String(err));
  assert.ok(err.cause instanceof ApplicationFailure, String(err.cause));
  assert.equal(err.cause.type, 'DeadlineExceeded');
}

async function runOf(sourceId: string) {
  return stack.db.prisma.fetchRun.findFirstOrThrow({
    where: { sourceId },
    include: { deadLetters: true, downstreamActions: true },
  });
}

/** `startToFireTimeout` of every timer an execution started, in ms. */
async function timersOf(workflowId: string, runId: string): Promise<number[]> {
  const history = await stack.client.workflow.getHandle(workflowId, runId).fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const t = e.timerStartedEventAttributes?.startToFireTimeout;
    return t ? [Number(t.seconds ?? 0) * 1000 + Math.round((t.nanos ?? 0) / 1e6)] : [];
  });
}

const reference = (sourceId: string) => `fetch-records:${sourceId}:${DATE}:submit-summary:r1`;

/**
 * Page fetches as activity tasks, for the tests that read the deadline's timer in the history: a
 * run whose steps are all local activities (the default) can start and cancel its timer within one
 * workflow task, and sdk-core then sends neither command (the deadline held all the same: the
 * tests without it, and rdl-far's).
 */
const VISIBLE_STEPS = { localFetch: false };

describe('run deadline', { concurrency: true }, () => {
  it('a run held in a slow page fetch past its max run time ends DeadlineExceeded with a dead letter; no later page is asked for', async () => {
    const started = await heldInFetchPastDeadline('rdl-fetch', VISIBLE_STEPS);
    // The deadline was fixed at the claim: the second execution armed what was left of it.
    const second = (await stack.client.workflow.getHandle(started.workflowId).describe()).runId;
    assert.notEqual(second, started.runId, 'the run continued as new before page 1');
    const [first] = await timersOf(started.workflowId, started.runId);
    const [rest] = await timersOf(started.workflowId, second);
    assert.ok(first !== undefined && rest !== undefined, 'each execution armed the deadline');
    assert.ok(first <= MAX_RUN_TIME_MS && rest < first, `timers ${first} then ${rest} ms`);
  });

  it('the same on the default path (local page fetches): the deadline reaches the held local fetch and the run ends DeadlineExceeded, its later pages never asked for', async () => {
    await heldInFetchPastDeadline('rdl-fetch-local', {});
  });

  it('a run past its deadline while its confirmed-to-be submission is held: the submission is voided once by the compensation', async () => {
    const sourceId = 'rdl-submit';
    await createSource(stack.db.prisma, sourceId, stack.partner.url, {
      pageSize: 100,
      submitSummary: true,
      submitMaxProcessingMs: 2_000,
      maxRunTimeMs: CONFIRM_HELD_MAX_RUN_TIME_MS,
    });
    stack.partner.faults.add({
      route: 'submissions',
      action: 'confirm',
      reference: reference(sourceId),
      kind: 'delay',
      delayMs: HOLD_MS,
    });
    const started = await start(sourceId);
    const err = await outcomeOf(started.workflowId);
    assert.ok(
      stack.partner.faults.list().every((f) => f.reference !== reference(sourceId)),
      'the partner held the confirm call (the run got that far before its deadline)',
    );
    assertDeadlineExceeded(err);

    const key = { jobType: 'fetch-records', sourceId, businessDate: DATE };
    const compensation = stack.client.workflow.getHandle(compensationWorkflowIdFor(key, 1));
    assert.deepEqual(await within(compensation.result(), 120_000, () => stack.worker.output()), {
      compensated: 1,
      notApplied: 0,
      needsManual: 0,
      runStatus: 'compensated',
    });
    const submitted = stack.partner.ledger
      .entries({ action: 'submit', reference: reference(sourceId) })
      .filter((e) => e.effect);
    const voided = stack.partner.ledger
      .entries({ action: 'void', reference: reference(sourceId) })
      .filter((e) => e.effect);
    assert.deepEqual([submitted.length, voided.length], [1, 1], 'one submission, voided once');
    assert.deepEqual(
      stack.partner.submissions.byReference(reference(sourceId)).map((s) => s.status),
      ['voided'],
    );
    const run = await runOf(sourceId);
    assert.deepEqual([run.status, run.errorClass], ['compensated', 'DeadlineExceeded']);
    assert.deepEqual(
      run.downstreamActions.map((a) => a.state),
      ['compensated'],
    );
    assert.deepEqual(
      run.deadLetters.map((d) => [d.errorType, d.errorCode]),
      [['DeadlineExceeded', 'RUN_DEADLINE']],
    );
  });

  it('a run waiting while its source is paused is bounded too: past its max run time it ends DeadlineExceeded', async () => {
    const sourceId = 'rdl-paused';
    await createSource(stack.db.prisma, sourceId, stack.partner.url, {
      pageSize: 100,
      maxRunTimeMs: MAX_RUN_TIME_MS,
    });
    // Page 1 is held a moment: the pause lands while it is fetched, the run stops once it is stored.
    stack.partner.faults.add({ sourceId, cursor: encodeCursor(101), kind: 'delay', delayMs: 3_000 });
    const started = await start(sourceId);
    await waitFor(
      () => !stack.partner.faults.list().some((f) => f.sourceId === sourceId),
      'page 1 held',
      60_000,
    );
    const ctx = { prisma: stack.db.prisma, temporal: stack.client, taskQueue: stack.taskQueue };
    await pauseSource(ctx, sourceId, { reason: 'partner maintenance', actor: 'test' });
    const err = await outcomeOf(started.workflowId);
    assertDeadlineExceeded(err);

    const run = await runOf(sourceId);
    assert.deepEqual([run.status, run.errorClass, run.pagesStored], ['dead_lettered', 'DeadlineExceeded', 2]);
    assert.deepEqual(
      run.deadLetters.map((d) => [d.errorType, d.errorCode]),
      [['DeadlineExceeded', 'RUN_DEADLINE']],
    );
    assert.equal(
      stack.partner.ledger.count({ sourceId, cursor: encodeCursor(201) }),
      0,
      'page 2 never asked for',
    );
    const history = await stack.client.workflow.getHandle(started.workflowId).fetchHistory();
    // Its status as the workflow set it (the database steps are local activities: no task events).
    const statuses = (history.events ?? []).flatMap((e) => {
      const status =
        e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.FetchStatus;
      return status?.data ? [JSON.parse(Buffer.from(status.data).toString()) as string] : [];
    });
    assert.ok(
      statuses.includes('paused'),
      `it was waiting at the page boundary of its paused source: ${statuses.join(', ')}`,
    );
    assert.ok(!statuses.includes('succeeded'));
  });

  it('a run within its max run time is unaffected: it succeeds, its deadline armed and then disarmed', async () => {
    const sourceId = 'rdl-within';
    await createSource(stack.db.prisma, sourceId, stack.partner.url, {
      pageSize: 100,
      maxRunTimeMs: 600_000,
      ...VISIBLE_STEPS,
    });
    const started = await start(sourceId);
    const result = await outcomeOf(started.workflowId);
    assert.deepEqual(result, {
      status: 'succeeded',
      fetchRunId: (await runOf(sourceId)).id,
      pages: 3,
      records: RECORDS,
    });
    const run = await runOf(sourceId);
    assert.deepEqual([run.status, run.errorClass, run.deadLetters.length], ['succeeded', null, 0]);
    const history = await stack.client.workflow.getHandle(started.workflowId, started.runId).fetchHistory();
    const events = history.events ?? [];
    assert.deepEqual(await timersOf(started.workflowId, started.runId), [600_000], 'the deadline was armed');
    assert.ok(
      events.some((e) => e.timerCanceledEventAttributes),
      'and disarmed when the run ended',
    );
  });

  it('a run far from its max run time (the default 24 h) starts no deadline timer at all, a billed action saved', async () => {
    const sourceId = 'rdl-far';
    await createSource(stack.db.prisma, sourceId, stack.partner.url, { pageSize: 100 });
    const started = await start(sourceId);
    const result = await outcomeOf(started.workflowId);
    assert.equal((result as { status?: string }).status, 'succeeded');
    assert.equal((await runOf(sourceId)).recordsStored, RECORDS);
    assert.deepEqual(
      await timersOf(started.workflowId, started.runId),
      [],
      'no step could end past the deadline',
    );
  });

  it('a deadline starts its timer at the first step that could end past it, not before', async () => {
    const sourceId = 'rdl-near';
    // Partner calls of at most 2 min (their preset's deadline) leave a 5 min deadline unreached;
    // a page's store (at most 10 min, a local database step) could pass it.
    await createSource(stack.db.prisma, sourceId, stack.partner.url, {
      pageSize: 100,
      retryPolicy: 'partnerHttpQuick',
      maxRunTimeMs: 300_000,
      ...VISIBLE_STEPS,
    });
    const started = await start(sourceId);
    const result = await outcomeOf(started.workflowId);
    assert.equal((result as { status?: string }).status, 'succeeded');
    const history = await stack.client.workflow.getHandle(started.workflowId, started.runId).fetchHistory();
    const events = history.events ?? [];
    const firstFetch = events.findIndex((e) => e.activityTaskScheduledEventAttributes);
    const timer = events.findIndex((e) => e.timerStartedEventAttributes);
    assert.ok(firstFetch >= 0 && timer > firstFetch, `timer at event ${timer}, first fetch at ${firstFetch}`);
    const [armed, ...others] = await timersOf(started.workflowId, started.runId);
    assert.deepEqual(others, []);
    // What was left of the 5 min when the first page's store was about to start.
    assert.ok(armed !== undefined && armed <= 300_000 && armed > 200_000, String(armed));
  });
});

/**
 * A run of a new source (`dispatch`: how its pages are fetched) whose page 1 the partner holds
 * past the run's max run time: asserts it ends DeadlineExceeded, dead-lettered with page 0 stored,
 * page 1 unfinished and page 2 never asked for. Returns the run as started.
 */
async function heldInFetchPastDeadline(sourceId: string, dispatch: { localFetch?: boolean }) {
  await createSource(stack.db.prisma, sourceId, stack.partner.url, {
    pageSize: 100,
    maxRunTimeMs: MAX_RUN_TIME_MS,
    ...dispatch,
  });
  // Page 1 (in the second execution: one page per execution) hangs at the partner.
  stack.partner.faults.add({ sourceId, cursor: encodeCursor(101), kind: 'delay', delayMs: HOLD_MS });
  const started = await start(sourceId, 1);
  const err = await outcomeOf(started.workflowId);
  assert.ok(
    !stack.partner.faults.list().some((f) => f.sourceId === sourceId),
    'the partner held page 1 (the run got that far before its deadline)',
  );
  assertDeadlineExceeded(err);

  const run = await runOf(sourceId);
  assert.deepEqual([run.status, run.errorClass, run.pagesStored], ['dead_lettered', 'DeadlineExceeded', 1]);
  assert.deepEqual(
    run.deadLetters.map((d) => [d.errorType, d.errorCode]),
    [['DeadlineExceeded', 'RUN_DEADLINE']],
  );
  assert.match(run.deadLetters[0]?.errorMessage ?? '', /maximum run time/);
  assert.equal(stack.partner.ledger.count({ sourceId, cursor: encodeCursor(151) }), 0, 'page 1 not finished');
  assert.equal(
    stack.partner.ledger.count({ sourceId, cursor: encodeCursor(201) }),
    0,
    'page 2 never asked for',
  );

  return started;
}
