// Inputs that bypass the client (R2 "validated payload", R7 "bad input stops at once", R11): runs
// started the way the Web UI's "Start Workflow" and `temporal workflow start` start them — the
// StartWorkflowExecution call with whatever JSON was typed — against a real `durable-fetch
// worker` process, real Temporal and PostgreSQL, and the demo partner. Each ends at once as a
// failed workflow with a non-retryable InvalidInput INVALID_WORKFLOW_INPUT failure naming the
// field (never a crash loop of failing workflow tasks, never a claim, page or partner call), and
// as a dead letter of the key its workflow id names when that key's run may hold one.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { createSource } from './helpers/deps.ts';
import { stepTypes } from './helpers/history-steps.ts';
import { within } from './helpers/process.ts';
import { temporalAddress } from './helpers/temporal.ts';
import { useWorkerStack } from './helpers/worker-stack.ts';

const DATE = '2026-06-06';
const RECORDS = 120;
const stack = useWorkerStack({ name: 'invalid-input', records: RECORDS });

const idOf = (sourceId: string) => `fetch/fetch-records/${sourceId}/${DATE}`;
const inputOf = (sourceId: string) => ({
  jobType: 'fetch-records',
  sourceId,
  businessDate: DATE,
  correlationId: `c-${sourceId}`,
  requestedBy: 'test',
});

/** Starts `fetchRecordsWorkflow` with `input` as is, as the Web UI's "Start Workflow" does. */
async function startRaw(workflowId: string, input: unknown): Promise<void> {
  await stack.client.workflow.start('fetchRecordsWorkflow', {
    workflowId,
    taskQueue: stack.taskQueue,
    args: [input] as never,
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
}

/** The same through the pinned Temporal CLI, as an operator types it. */
async function startWithCli(workflowId: string, input: unknown): Promise<void> {
  const cli = process.env.DF_TEST_TEMPORAL_CLI;
  assert.ok(cli, 'test/run.ts sets DF_TEST_TEMPORAL_CLI');
  await promisify(execFile)(cli, [
    'workflow',
    'start',
    ...['--type', 'fetchRecordsWorkflow', '--task-queue', stack.taskQueue, '--workflow-id', workflowId],
    ...['--input', JSON.stringify(input), '--address', temporalAddress()],
  ]);
}

/** How the workflow ended: its failure (must be a failed workflow) and its workflow task failures. */
async function refusal(workflowId: string) {
  const handle = stack.client.workflow.getHandle(workflowId);
  const err = await within(
    handle.result().then(
      () => undefined,
      (e: unknown) => e,
    ),
    60_000,
    () => `no end of ${workflowId}: ${stack.worker.output()}`,
  );
  assert.ok(err instanceof WorkflowFailedError, `${workflowId} failed, not ${String(err)}`);
  const cause = err.cause;
  assert.ok(cause instanceof ApplicationFailure);
  const events = (await handle.fetchHistory()).events ?? [];
  return {
    type: cause.type,
    nonRetryable: cause.nonRetryable,
    message: cause.message,
    code: (cause.details?.[0] as { code?: string } | undefined)?.code,
    taskFailures: events.filter((e) => e.workflowTaskFailedEventAttributes).length,
    activities: stepTypes(events),
  };
}

async function rowsOf(sourceId: string) {
  const run = await stack.db.prisma.fetchRun.findFirst({ where: { sourceId } });
  const letters = await stack.db.prisma.deadLetter.findMany({ where: { sourceId } });
  const staged = await stack.db.prisma.fetchedPage.count({
    where: { key: { startsWith: `fetch-records:${sourceId}:` } },
  });
  const records = await stack.db.prisma.fetchedRecord.count({ where: { sourceId } });
  return { run, letters, staged, records };
}

interface Case {
  name: string;
  /** What replaces or joins the valid input's fields (`null`: the whole input is null). */
  change: Record<string, unknown> | null;
  field: RegExp;
  /** Started under this workflow id instead of the key's. */
  workflowId?: string;
  /** Whether the key's run records the refusal as a dead letter (else: no run row at all). */
  deadLetter: boolean;
  /** Started with `temporal workflow start` rather than the client API. */
  cli?: boolean;
  /** No source row for the key. */
  noSource?: boolean;
}

const forgedResume = { fetchRunId: randomUUID(), leaseToken: randomUUID(), cursor: null, pagesStored: 0 };
const CASES: Case[] = [
  {
    name: 'ppe',
    cli: true,
    change: { pagesPerExecution: 'abc' },
    field: /pagesPerExecution/,
    deadLetter: true,
  },
  { name: 'huge-page', cli: true, change: { pageSize: 1e9 }, field: /pageSize/, deadLetter: true },
  { name: 'text-page', change: { pageSize: 'abc' }, field: /pageSize/, deadLetter: true },
  { name: 'nul', change: { sourceId: 'ii-nul\u0000x' }, field: /sourceId/, deadLetter: true },
  {
    name: 'mega-cid',
    change: { correlationId: 'x'.repeat(1 << 20) },
    field: /correlationId/,
    deadLetter: true,
  },
  { name: 'who', change: { requestedBy: 'mallory' }, field: /requestedBy/, deadLetter: true },
  { name: 'null', cli: true, change: null, field: /\(input\)/, deadLetter: true },
  {
    name: 'forged',
    change: { resume: forgedResume },
    field: /resume is set by continue-as-new only/,
    deadLetter: true,
  },
  {
    name: 'foreign-id',
    change: {},
    workflowId: `anything-else-${randomUUID()}`,
    field: /workflowId/,
    deadLetter: false,
  },
  { name: 'ghost', change: { pageSize: -1 }, field: /pageSize/, deadLetter: false, noSource: true },
];

void describe('inputs that bypass the client', () => {
  it('each invalid start fails at once as InvalidInput naming the field: no crash loop, no claim, no partner call; a dead letter where the key can hold one', async () => {
    await Promise.all(
      CASES.map(async (c) => {
        const sourceId = `ii-${c.name}`;
        if (!c.noSource) await createSource(stack.db.prisma, sourceId, stack.partner.url, { pageSize: 50 });
        const input = c.change === null ? null : { ...inputOf(sourceId), ...c.change };
        const workflowId = c.workflowId ?? idOf(sourceId);
        await (c.cli ? startWithCli(workflowId, input) : startRaw(workflowId, input));
        const end = await refusal(workflowId);
        assert.equal(end.type, 'InvalidInput', c.name);
        assert.equal(end.nonRetryable, true, c.name);
        assert.equal(end.code, 'INVALID_WORKFLOW_INPUT', c.name);
        assert.match(end.message, c.field, c.name);
        assert.ok(end.message.length < 600, `${c.name}: the message names fields, never a value`);
        assert.equal(end.taskFailures, 0, `${c.name}: no workflow task failed`);
        // Recorded against the key whenever the workflow id names one (the activity finds no source for `ghost`).
        assert.deepEqual(end.activities, c.workflowId ? [] : ['recordInvalidStart'], c.name);
        assert.equal(stack.partner.ledger.count({ sourceId }), 0, `${c.name}: the partner was never called`);
        const rows = await rowsOf(sourceId);
        assert.equal(rows.staged + rows.records, 0, `${c.name}: nothing staged or stored`);
        if (c.deadLetter) {
          assert.equal(rows.run?.status, 'dead_lettered', c.name);
          assert.equal(rows.run?.errorClass, 'InvalidInput', c.name);
          assert.equal(rows.letters.length, 1, c.name);
          assert.equal(rows.letters[0]?.errorCode, 'INVALID_WORKFLOW_INPUT', c.name);
          assert.equal(rows.letters[0]?.workflowId, workflowId, c.name);
          assert.doesNotMatch(rows.letters[0]?.errorMessage ?? '', /x{100}/, c.name);
        } else {
          assert.equal(rows.run, null, `${c.name}: no run row`);
          assert.equal(rows.letters.length, 0, c.name);
        }
      }),
    );
  });

  it('an invalid start never takes a key from its live owner, nor dead-letters a succeeded key', async () => {
    const sourceId = 'ii-owned';
    await createSource(stack.db.prisma, sourceId, stack.partner.url, { pageSize: 50 });
    // A Schedule-style id owns the key and is held in its second page fetch.
    stack.partner.faults.add({ sourceId, kind: 'delay', delayMs: 4_000, afterRequests: 1 });
    const owner = `${idOf(sourceId)}-2026-11-29T02:00:00Z`;
    await startRaw(owner, inputOf(sourceId));
    await within(
      (async () => {
        while (stack.partner.faults.list().some((f) => f.sourceId === sourceId))
          await new Promise((r) => setTimeout(r, 100));
      })(),
      60_000,
      () => stack.worker.output(),
    );
    await startRaw(idOf(sourceId), { ...inputOf(sourceId), pageSize: 0 });
    assert.equal((await refusal(idOf(sourceId))).type, 'InvalidInput');
    const result = (await stack.client.workflow.getHandle(owner).result()) as {
      status: string;
      records: number;
    };
    assert.deepEqual([result.status, result.records], ['succeeded', RECORDS]);
    // Now succeeded: a second invalid start of the key changes nothing either.
    await startRaw(idOf(sourceId), { ...inputOf(sourceId), pagesPerExecution: 0 });
    assert.equal((await refusal(idOf(sourceId))).type, 'InvalidInput');
    const rows = await rowsOf(sourceId);
    assert.equal(rows.run?.status, 'succeeded');
    assert.equal(rows.run?.workflowId, owner);
    assert.equal(rows.letters.length, 0);
    assert.equal(rows.records, RECORDS);
  });
});
