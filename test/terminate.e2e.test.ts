// The Web UI's Terminate (TerminateWorkflowExecution, through the pinned Temporal CLI) of runs in
// every state, on one real `durable-fetch worker` process with a short lease and a 1 s sweep. A
// terminated workflow runs no code: its row stays `running`, its ledger rows `attempting` or
// `confirmed`. The sweep must settle each run to its true end (R1, R11) — a dead letter where one
// is true, the downstream effects compensated through the normal path (R4) — and nothing may be
// duplicated (R3, R12b); a closed run is refused by Temporal and left as it was. The partner's
// store and ledger and the database rows are the judge; the cells run concurrently and the test
// prints the matrix as measured.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pauseSource } from '../client/sources/index.ts';
import { SEARCH_KEYS } from '../client/start-fetch.ts';
import { compensationWorkflowIdFor } from '../contract/business-key.ts';
import { detail, runCli } from './helpers/cli.ts';
import { terminate } from './helpers/terminate-kit.ts';
import { DATE, RECORDS, startTerminateStack, type TerminateStack } from './helpers/terminate-stack.ts';

/** A held call: longer than it takes to terminate, shorter than the worker's response timeout. */
const HOLD_MS = 15_000;

let s: TerminateStack;
before(async () => {
  s = await startTerminateStack();
});
after(async () => {
  await s?.stop();
});

const referenceOf = (sourceId: string) => `fetch-records:${sourceId}:${DATE}:submit-summary:r1`;

describe('terminate', { concurrency: true }, () => {
  it('terminate: a succeeded run is refused by Temporal and keeps its confirmed submission', async () => {
    await s.source('t-succeeded', { submitSummary: true });
    const { handle } = await s.start('t-succeeded');
    assert.equal(((await handle.result()) as { status: string }).status, 'succeeded');
    const t = await terminate(handle.workflowId, 'operator: terminate (test)');
    assert.equal(t.ok, false, 'a closed workflow cannot be terminated');
    const m = await s.record('succeeded', `refused: ${t.said}`, 't-succeeded');
    assert.deepEqual(
      [m.status, m.deadLetters, m.actions, m.live],
      ['succeeded', [], ['confirmed'], ['confirmed']],
    );
    assert.deepEqual([m.submits, m.voids], [1, 0], 'the correct submission is never voided');
  });

  it('terminate: a dead-lettered run is refused; terminating its compensation mid-void, the sweep starts it again and it voids once', async () => {
    await s.source('t-dead', { submitSummary: true });
    s.partner.faults.add({
      route: 'submissions',
      action: 'confirm',
      reference: referenceOf('t-dead'),
      kind: 'status',
      status: 422,
    });
    const voidHeld = s.partner.faults.add({
      route: 'submissions',
      action: 'void',
      kind: 'delay',
      delayMs: HOLD_MS,
      reference: referenceOf('t-dead'),
    });
    const { handle } = await s.start('t-dead');
    await assert.rejects(handle.result());
    const t = await terminate(handle.workflowId, 'operator: terminate (test)');
    assert.equal(t.ok, false, 'a closed workflow cannot be terminated');
    await s.held(voidHeld, 'the compensation holding its void');
    const c = await terminate(
      compensationWorkflowIdFor({ jobType: 'fetch-records', sourceId: 't-dead', businessDate: DATE }, 1),
      'operator: terminate the compensation (test)',
    );
    assert.equal(c.ok, true, c.said);
    await s.settled('t-dead');
    const m = await s.record(
      'dead-lettered (its compensation terminated mid-void)',
      `refused: ${t.said}; compensation: ${c.said}`,
      't-dead',
    );
    assert.deepEqual(
      [m.status, m.deadLetters, m.actions, m.live],
      ['compensated', ['InvalidInput/HTTP_422'], ['compensated'], []],
    );
    assert.deepEqual([m.submits, m.voids], [1, 1]);
  });

  it('terminate: a cancelled run is refused and stays cancelled', async () => {
    await s.source('t-cancelled');
    const fault = s.partner.faults.add({
      sourceId: 't-cancelled',
      kind: 'delay',
      delayMs: HOLD_MS,
      afterRequests: 1,
    });
    const { handle } = await s.start('t-cancelled');
    await s.held(fault, 'the partner holding page 2');
    await handle.cancel();
    await assert.rejects(handle.result());
    const t = await terminate(handle.workflowId, 'operator: terminate (test)');
    assert.equal(t.ok, false, 'a closed workflow cannot be terminated');
    const m = await s.record('cancelled', `refused: ${t.said}`, 't-cancelled');
    assert.deepEqual([m.status, m.deadLetters, m.records], ['cancelled', [], 50]);
  });

  it('terminate: a run held in a page fetch is dead-lettered WORKFLOW_TERMINATED by the sweep; a retry then stores each record once', async () => {
    await s.source('t-page');
    const fault = s.partner.faults.add({
      sourceId: 't-page',
      kind: 'delay',
      delayMs: HOLD_MS,
      afterRequests: 1,
      times: 1,
    });
    const { handle } = await s.start('t-page');
    await s.held(fault, 'the partner holding page 2');
    const t = await terminate(handle.workflowId, 'operator: the partner hangs (test)');
    assert.equal(t.ok, true, t.said);
    const run = await s.settled('t-page');
    assert.equal(run.status, 'dead_lettered');
    const letter = await s.db.prisma.deadLetter.findFirstOrThrow({ where: { fetchRunId: run.id } });
    const retry = await runCli(['dlq', 'retry', letter.id, '--reason', 'after a terminate (test)'], s.env);
    assert.equal(retry.code, 0, detail(retry));
    await s.wait(
      async () =>
        (await s.db.prisma.fetchRun.findUniqueOrThrow({ where: { id: run.id } })).status === 'succeeded'
          ? true
          : undefined,
      'the retry to succeed',
    );
    const m = await s.record('running: page fetch (then dlq retry)', t.said, 't-page');
    assert.deepEqual(
      [m.status, m.deadLetters, m.records],
      ['succeeded', ['Internal/WORKFLOW_TERMINATED'], RECORDS],
    );
  });

  it('terminate: a run held in its downstream submit: the submission that takes effect after the terminate is found and voided once', async () => {
    await s.source('t-submit', { submitSummary: true });
    // The partner applies the held submit when its wait ends, whether or not its client is still there.
    const fault = s.partner.faults.add({
      route: 'submissions',
      action: 'submit',
      reference: referenceOf('t-submit'),
      kind: 'delay',
      delayMs: HOLD_MS,
      lateEffectMs: HOLD_MS,
    });
    const { handle } = await s.start('t-submit');
    await s.held(fault, 'the partner holding the submit');
    const t = await terminate(handle.workflowId, 'operator: terminate (test)');
    assert.equal(t.ok, true, t.said);
    await s.settled('t-submit');
    const m = await s.record('running: downstream submit', t.said, 't-submit');
    assert.deepEqual(
      [m.status, m.deadLetters, m.live],
      ['compensated', ['Internal/WORKFLOW_TERMINATED'], []],
    );
    assert.deepEqual([m.submits, m.voids], [1, 1], 'the late submission voided, exactly once');
  });

  it('terminate: a run held in its downstream confirm: the sweep dead-letters it and its compensation voids the submission once', async () => {
    await s.source('t-confirm', { submitSummary: true });
    const fault = s.partner.faults.add({
      route: 'submissions',
      action: 'confirm',
      reference: referenceOf('t-confirm'),
      kind: 'delay',
      delayMs: HOLD_MS,
    });
    const { handle } = await s.start('t-confirm');
    await s.held(fault, 'the partner holding the confirm');
    const t = await terminate(handle.workflowId, 'operator: terminate (test)');
    assert.equal(t.ok, true, t.said);
    await s.settled('t-confirm');
    const m = await s.record('running: downstream confirm', t.said, 't-confirm');
    assert.deepEqual(
      [m.status, m.deadLetters, m.actions, m.live],
      ['compensated', ['Internal/WORKFLOW_TERMINATED'], ['compensated'], []],
    );
    assert.deepEqual([m.submits, m.voids], [1, 1]);
  });

  it('terminate: a run paused at a safe point is dead-lettered by the sweep, with nothing at the partner', async () => {
    await s.source('t-paused', { submitSummary: true });
    const fault = s.partner.faults.add({
      sourceId: 't-paused',
      kind: 'delay',
      delayMs: HOLD_MS,
      afterRequests: 1,
      times: 1,
    });
    const { handle } = await s.start('t-paused');
    await s.held(fault, 'the partner holding page 2');
    // What `sources pause` does, in process: done well within the held page.
    const ctx = { temporal: s.client, prisma: s.db.prisma, taskQueue: s.env.DURABLE_FETCH_TASK_QUEUE ?? '' };
    const paused = await pauseSource(ctx, 't-paused', {
      reason: 'test: pause then terminate',
      actor: 'test',
    });
    assert.equal(paused.runningRuns, 1);
    await s.wait(
      async () =>
        (await handle.describe()).typedSearchAttributes.get(SEARCH_KEYS.status) === 'paused'
          ? true
          : undefined,
      'the run to wait paused after page 2',
    );
    const t = await terminate(handle.workflowId, 'operator: terminate a paused run (test)');
    assert.equal(t.ok, true, t.said);
    await s.settled('t-paused');
    const m = await s.record('paused (at a page boundary)', t.said, 't-paused');
    assert.deepEqual(
      [m.status, m.deadLetters, m.actions, m.records, m.submits],
      ['dead_lettered', ['Internal/WORKFLOW_TERMINATED'], [], 100, 0],
    );
  });

  it('terminate: a later continued-as-new execution held in its confirm is settled like the first: dead letter, submission voided once', async () => {
    await s.source('t-can', { submitSummary: true });
    const fault = s.partner.faults.add({
      route: 'submissions',
      action: 'confirm',
      reference: referenceOf('t-can'),
      kind: 'delay',
      delayMs: HOLD_MS,
    });
    const { handle, runId: first } = await s.start('t-can', 1);
    await s.held(fault, 'the third execution holding the confirm');
    const latest = (await s.client.workflow.getHandle(handle.workflowId).describe()).runId;
    assert.notEqual(latest, first, 'the run continued as new');
    const t = await terminate(handle.workflowId, 'operator: terminate (test)');
    assert.equal(t.ok, true, t.said);
    await s.settled('t-can');
    const m = await s.record('a later continued-as-new execution (in confirm)', t.said, 't-can');
    assert.deepEqual(
      [m.status, m.deadLetters, m.actions, m.live],
      ['compensated', ['Internal/WORKFLOW_TERMINATED'], ['compensated'], []],
    );
    assert.deepEqual([m.submits, m.voids], [1, 1]);
    const letter = await s.db.prisma.deadLetter.findFirstOrThrow({ where: { sourceId: 't-can' } });
    assert.equal(letter.workflowRunId, latest, 'the dead letter names the execution that was terminated');
  });
});
