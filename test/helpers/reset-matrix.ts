/**
 * The Web UI Reset matrix (R1, R3, R4, R11): one real `durable-fetch worker`, the demo partner and
 * a database per test file; one source per cell. A cell brings a run to a state, resets it with
 * the ResetWorkflowExecution call the Web UI makes (through the pinned Temporal CLI), and measures
 * what the database and the partner's store and ledger hold afterwards (reset-measure.ts). The
 * table of the measured cells is printed when the file ends.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { after, before } from 'node:test';
import { startPartner } from '../../partner/server.ts';
import { useTestDatabase } from './database.ts';
import { createSource } from './deps.ts';
import { waitFor } from './outbox.ts';
import { spawnWorker, within } from './process.ts';
import { formatTable, RECORDS, type Stack } from './reset-measure.ts';
import { temporalAddress, testClient } from './temporal.ts';

/** Where the reset goes: the first execution's first task, the current execution's last task, or
 * the first task of the last continued-as-new execution. */
export type ResetKind = 'first' | 'last' | 'last-can';

/** Registers the file's services and the table printed at its end. */
export function useResetStack(
  date: string,
  title: string,
): { stack: () => Stack; table: Map<string, string> } {
  let stack: Stack | undefined;
  const table = new Map<string, string>();
  before(async () => {
    const [db, partner, client] = await Promise.all([
      useTestDatabase(),
      startPartner({ port: 0, recordCount: () => RECORDS }),
      testClient(),
    ]);
    const taskQueue = `test-reset-matrix-${randomUUID()}`;
    const worker = spawnWorker({
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
      PARTNER_PAGE_LIMIT: '50',
      HTTP_CONNECT_TIMEOUT_MS: '1000',
      HTTP_RESPONSE_TIMEOUT_MS: '2000',
      LOG_LEVEL: 'warn',
    });
    stack = { db, partner, client, worker, taskQueue, date };
    await worker.waitFor(/worker polling task queue/, 60_000);
  });
  after(async () => {
    console.log(formatTable(title, table));
    await stack?.worker.stop('SIGKILL', 5_000);
    await stack?.client.connection.close();
    await stack?.partner.close();
    await stack?.db.drop();
  });
  return {
    stack: () => {
      assert.ok(stack, 'before() ran');
      return stack;
    },
    table,
  };
}

export const workflowIdOf = (s: Stack, sourceId: string) => `fetch/fetch-records/${sourceId}/${s.date}`;
export const referenceOf = (s: Stack, sourceId: string, round: number) =>
  `fetch-records:${sourceId}:${s.date}:submit-summary:r${round}`;

/** A submitting source whose partner applies a submission within 2 s of receiving it, or never. */
export async function submittingSource(
  s: Stack,
  sourceId: string,
  extra: { localFetch?: boolean } = {},
): Promise<void> {
  await createSource(s.db.prisma, sourceId, s.partner.url, {
    pageSize: 50,
    submitSummary: true,
    submitMaxProcessingMs: 2_000,
    ...extra,
  });
}

/** Starts the run (as `temporal workflow start` would) and returns its first execution's run id. */
export async function start(s: Stack, sourceId: string, pagesPerExecution?: number): Promise<string> {
  const handle = await s.client.workflow.start('fetchRecordsWorkflow', {
    workflowId: workflowIdOf(s, sourceId),
    taskQueue: s.taskQueue,
    args: [
      {
        sourceId,
        businessDate: s.date,
        correlationId: randomUUID(),
        requestedBy: 'test',
        ...(pagesPerExecution === undefined ? {} : { pagesPerExecution }),
      },
    ],
  });
  return handle.firstExecutionRunId;
}

/** The run id of the workflow's current (latest) execution. */
export async function currentRunId(s: Stack, sourceId: string): Promise<string> {
  return (await s.client.workflow.getHandle(workflowIdOf(s, sourceId)).describe()).runId;
}

/**
 * What the Web UI's Reset does (ResetWorkflowExecution), through the CLI an operator would use:
 * `first` resets the first execution to its first workflow task, `last` the current execution to
 * its last, `last-can` the current execution to its first.
 */
export async function reset(s: Stack, sourceId: string, kind: ResetKind, firstRunId: string): Promise<void> {
  const cli = process.env.DF_TEST_TEMPORAL_CLI;
  assert.ok(cli, 'test/run.ts sets DF_TEST_TEMPORAL_CLI');
  const runId = kind === 'first' ? firstRunId : await currentRunId(s, sourceId);
  await promisify(execFile)(cli, [
    'workflow',
    'reset',
    '--workflow-id',
    workflowIdOf(s, sourceId),
    '--run-id',
    runId,
    '--type',
    kind === 'last' ? 'LastWorkflowTask' : 'FirstWorkflowTask',
    '--reason',
    'operator reset (test)',
    '--address',
    temporalAddress(),
  ]);
}

/** The outcome of the key's latest execution: its result's status, or the failure's type. */
export async function latestOutcome(s: Stack, sourceId: string): Promise<string> {
  const handle = s.client.workflow.getHandle(workflowIdOf(s, sourceId));
  try {
    const result = await within(handle.result() as Promise<{ status: string }>, 150_000, () =>
      s.worker.output(),
    );
    return result.status;
  } catch (err) {
    const cause = (err as { cause?: { cause?: { type?: string }; type?: string; name?: string } }).cause;
    return cause?.cause?.type ?? cause?.type ?? cause?.name ?? String(err);
  }
}

/** Waits until the partner took up (holds) every fault of the source's round-1 reference. */
export async function heldAtPartner(s: Stack, sourceId: string, what: string): Promise<void> {
  const reference = referenceOf(s, sourceId, 1);
  await waitFor(() => s.partner.faults.list().every((f) => f.reference !== reference), what, 90_000);
}

/** Waits until the partner took up every read fault of the source. */
export async function readFaultTaken(s: Stack, sourceId: string, what: string): Promise<void> {
  await waitFor(() => s.partner.faults.list().every((f) => f.sourceId !== sourceId), what, 90_000);
}

export { downstreamSettled, measure, type Measured, recordCell, type Stack } from './reset-measure.ts';
