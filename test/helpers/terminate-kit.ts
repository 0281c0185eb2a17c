/**
 * What the Terminate tests share: the Web UI's Terminate (TerminateWorkflowExecution, here through
 * the pinned Temporal CLI an operator would use), polling, and what one run left behind — its row,
 * dead letters, ledger rows, business rows and outbox events in PostgreSQL, and the partner's
 * submissions and ledger — measured, never assumed, for the matrix table the tests print.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PartnerServer } from '../../partner/server.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { readOrphanedActions } from '../../db/ledger/orphaned-actions.ts';
import { temporalAddress } from './temporal.ts';

/**
 * Terminates the current execution of `workflowId` as the Web UI's Terminate button does. Resolves
 * with whether Temporal accepted it and, when not, its one-line answer (e.g. a closed workflow).
 */
export async function terminate(workflowId: string, reason: string): Promise<{ ok: boolean; said: string }> {
  const cli = process.env.DF_TEST_TEMPORAL_CLI;
  assert.ok(cli, 'test/run.ts sets DF_TEST_TEMPORAL_CLI');
  try {
    await promisify(execFile)(cli, [
      'workflow',
      'terminate',
      '--workflow-id',
      workflowId,
      '--reason',
      reason,
      '--address',
      temporalAddress(),
    ]);
    return { ok: true, said: 'terminated' };
  } catch (err) {
    const text = (err as { stderr?: string }).stderr ?? String(err);
    const last = text.trim().split('\n').at(-1) ?? text;
    return { ok: false, said: last.replace(/^Error: failed to terminate workflow: /, '') };
  }
}

/** Polls `check` every 200 ms until it returns a value other than undefined; fails after `ms`. */
export async function until<T>(
  check: () => Promise<T | undefined>,
  what: () => string,
  ms: number,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what()}`);
    await sleep(200);
  }
}

/** What one run of a source left behind, as the database and the partner say. */
export interface Measured {
  status: string;
  /** Dead letters of the run, as `errorType/errorCode`. */
  deadLetters: string[];
  /** Ledger rows as `state`, in creation order. */
  actions: string[];
  records: number;
  recordsStored: number;
  /** Outbox events beyond one per (topic, page): duplicates. */
  duplicateEvents: number;
  /** Partner-side effects under the source's references: submissions made, voids that took effect. */
  submits: number;
  voids: number;
  /** Submissions live (not voided) at the partner, as `status`. */
  live: string[];
  /** Orphaned actions of this run now (db/ledger/orphaned-actions.ts). */
  orphaned: number;
}

/** Measures what the run of `sourceId` left behind. Read-only. */
export async function measure(
  prisma: PrismaClient,
  partner: PartnerServer,
  sourceId: string,
): Promise<Measured> {
  const run = await prisma.fetchRun.findFirstOrThrow({
    where: { sourceId },
    include: { deadLetters: true, downstreamActions: { orderBy: { createdAt: 'asc' } } },
  });
  const [events] = await prisma.$queryRaw<{ total: number; distinct: number }[]>`
    SELECT count(*)::int AS total, count(DISTINCT (topic, payload->>'pageNo'))::int AS distinct
      FROM outbox_event WHERE aggregate_id = ${run.id}`;
  const mine = (reference: string | undefined) => reference?.startsWith(`fetch-records:${sourceId}:`);
  const effects = (action: 'submit' | 'void') =>
    partner.ledger.entries({ action }).filter((e) => e.effect && mine(e.reference)).length;
  const orphans = await readOrphanedActions(prisma, { limit: 1000 });
  return {
    status: run.status,
    deadLetters: run.deadLetters.map((d) => `${d.errorType}/${d.errorCode ?? ''}`),
    actions: run.downstreamActions.map((a) => a.state),
    records: await prisma.fetchedRecord.count({ where: { sourceId } }),
    recordsStored: run.recordsStored,
    duplicateEvents: (events?.total ?? 0) - (events?.distinct ?? 0),
    submits: effects('submit'),
    voids: effects('void'),
    live: partner.submissions
      .list()
      .filter((s) => mine(s.reference) && s.status !== 'voided')
      .map((s) => s.status),
    orphaned: orphans.runs.find((r) => r.fetchRunId === run.id)?.actions ?? 0,
  };
}

/** One cell of the matrix: the run's state when Terminate came, what Temporal said, what was left. */
export interface Cell {
  state: string;
  terminate: string;
  measured: Measured;
}

/** The matrix as a Markdown table (the runbook holds a copy of a measured one). */
export function matrixTable(cells: readonly Cell[]): string {
  const head = [
    'run state when terminated',
    'Terminate',
    'final status',
    'dead letter',
    'ledger',
    'records (stored)',
    'dup events',
    'submits',
    'voids',
    'live at partner',
    'orphaned',
  ];
  const rows = cells.map(({ state, terminate, measured: m }) => [
    state,
    terminate,
    m.status,
    m.deadLetters.join(', ') || '—',
    m.actions.join(', ') || '—',
    `${m.records} (${m.recordsStored})`,
    String(m.duplicateEvents),
    String(m.submits),
    String(m.voids),
    m.live.join(', ') || '—',
    String(m.orphaned),
  ]);
  return [head, head.map(() => '---'), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
}
