/**
 * The Web UI Reset matrix (R1, R3, R4, R11): one real `durable-fetch worker`, the demo partner and
 * a database per test file; one source per cell. A cell brings a run to a state, resets it with
 * the ResetWorkflowExecution call the Web UI makes (through the pinned Temporal CLI), and measures
 * what the database and the partner's store and ledger hold afterwards. The table of the measured
 * cells is printed when the file ends.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { after, before } from 'node:test';
import type { Client } from '@temporalio/client';
import { startPartner, type PartnerServer } from '../../partner/server.ts';
import { useTestDatabase, type TestDatabase } from './database.ts';
import { createSource } from './deps.ts';
import { waitFor } from './outbox.ts';
import { spawnWorker, type Spawned, within } from './process.ts';
import { temporalAddress, testClient } from './temporal.ts';

/** 120 records in pages of 50: three stored pages, one per execution with `pagesPerExecution: 1`. */
export const RECORDS = 120;
export const PAGES = 3;

/** Where the reset goes: the first execution's first task, the current execution's last task, or
 * the first task of the last continued-as-new execution. */
export type ResetKind = 'first' | 'last' | 'last-can';

export interface Measured {
  status: string;
  /** Stored business rows minus the partner's records (0: none missing, none doubled). */
  extraRows: number;
  /** Page events beyond one per page, completion events beyond one. */
  extraEvents: number;
  /** Submit calls that created a submission, and the most under one reference. */
  submits: number;
  maxPerReference: number;
  live: number;
  voided: number;
  /** `<errorType>/<errorCode>:<status>` of each dead letter of the run. */
  deadLetters: string[];
}

export interface Stack {
  db: TestDatabase;
  partner: PartnerServer;
  client: Client;
  worker: Spawned;
  taskQueue: string;
  date: string;
}

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
export async function submittingSource(s: Stack, sourceId: string): Promise<void> {
  await createSource(s.db.prisma, sourceId, s.partner.url, {
    pageSize: 50,
    submitSummary: true,
    submitMaxProcessingMs: 2_000,
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

/**
 * Waits (up to a minute) until the run's ledger rows are settled: none in flight or being
 * compensated, none live of a run that did not succeed — what its compensation would change.
 */
export async function downstreamSettled(s: Stack, sourceId: string): Promise<void> {
  const settled = async () => {
    const run = await s.db.prisma.fetchRun.findFirstOrThrow({
      where: { sourceId },
      include: { downstreamActions: true },
    });
    if (run.status === 'running') return false;
    return run.downstreamActions.every(
      (a) =>
        !['attempting', 'unknown', 'compensating'].includes(a.state) &&
        (a.state !== 'confirmed' || run.status === 'succeeded'),
    );
  };
  await waitFor(settled, 'the ledger settled', 60_000).catch(() => undefined); // measured as it is
}

/** What the database and the partner hold for the source's run. */
export async function measure(s: Stack, sourceId: string): Promise<Measured> {
  const { prisma } = s.db;
  const run = await prisma.fetchRun.findFirstOrThrow({ where: { sourceId }, include: { deadLetters: true } });
  const rows = await prisma.fetchedRecord.count({ where: { sourceId } });
  const topics = await prisma.outboxEvent.groupBy({
    by: ['topic'],
    where: { aggregateId: run.id },
    _count: true,
  });
  const countOf = (topic: string) => topics.find((t) => t.topic === topic)?._count ?? 0;
  const mine = (reference: string | undefined) =>
    reference?.startsWith(`fetch-records:${sourceId}:`) ?? false;
  const effects = s.partner.ledger.entries({ action: 'submit' }).filter((e) => e.effect && mine(e.reference));
  const perReference = new Map<string, number>();
  for (const e of effects)
    perReference.set(e.reference ?? '', (perReference.get(e.reference ?? '') ?? 0) + 1);
  const submissions = s.partner.submissions.list().filter((x) => mine(x.reference));
  return {
    status: run.status,
    extraRows: rows - RECORDS,
    extraEvents:
      Math.max(0, countOf('fetch.page_stored') - PAGES) + Math.max(0, countOf('fetch.run_completed') - 1),
    submits: effects.length,
    maxPerReference: Math.max(0, ...perReference.values()),
    live: submissions.filter((x) => x.status !== 'voided').length,
    voided: submissions.filter((x) => x.status === 'voided').length,
    deadLetters: run.deadLetters
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
      .map((d) => `${d.errorType}/${d.errorCode ?? '-'}:${d.status}`),
  };
}

/** Asserts the safety every cell shares, and records the cell's row of the table. */
export function recordCell(
  table: Map<string, string>,
  cell: { order: number; state: string; kind: ResetKind | 'first=last-can'; outcome: string },
  m: Measured,
): void {
  const kindOrder = ['first', 'first=last-can', 'last', 'last-can'].indexOf(cell.kind);
  table.set(
    `${String(cell.order).padStart(2, '0')}${kindOrder} ${cell.state.padEnd(22)} ${cell.kind.padEnd(15)}`,
    [
      cell.outcome.padEnd(16),
      m.status.padEnd(14),
      String(m.extraRows).padStart(5),
      String(m.extraEvents).padStart(7),
      `${m.submits}/${m.maxPerReference}`.padStart(9),
      String(m.live).padStart(5),
      String(m.voided).padStart(7),
      `  ${m.deadLetters.join(', ') || '-'}`,
    ].join(' '),
  );
  // A run that did not succeed may have stored only some of the records, never one twice.
  if (m.status === 'succeeded') assert.equal(m.extraRows, 0, 'each partner record stored once');
  else assert.ok(m.extraRows <= 0, 'no partner record stored twice');
  assert.equal(m.extraEvents, 0, 'no duplicate outbox event');
  assert.ok(m.maxPerReference <= 1, 'at most one submission per reference');
  assert.ok(m.live <= 1, 'never two live submissions');
}

function formatTable(title: string, table: Map<string, string>): string {
  const head =
    `${'state'.padEnd(22)} ${'reset to'.padEnd(15)} ${'workflow'.padEnd(16)} ${'row'.padEnd(14)} ` +
    `${'+rows'.padStart(5)} ${'+events'.padStart(7)} ${'submits'.padStart(9)} ${'live'.padStart(5)} ` +
    `${'voided'.padStart(7)}   dead letters`;
  const lines = [...table.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k.slice(4)} ${v}`);
  return [`\n${title}`, head, ...lines].join('\n');
}
