/**
 * The compensation ledger for operators (issue #6, R4, R11): reading `downstream_action` rows, and
 * the two things a human may do to one that could not be settled by itself (`needs_manual`):
 * resolve it (it was settled by hand) or retry its compensation. Every such act is recorded in
 * `audit_entry` in the same transaction as the change it made.
 *
 * Be very careful: every state change here is a conditional UPDATE on `needs_manual`, like the
 * activities' (activities/downstream.ts), so an operator racing a compensation (or another
 * operator) can never move a row backwards.
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { settleRun } from '../db/ledger.ts';
import type {
  AuditEntry,
  DownstreamAction,
  DownstreamState,
  Prisma,
  RunStatus,
} from '../prisma/generated/client.ts';
import { errorMessage, UserFacingError } from '../runtime/errors.ts';
import type { CompensateRunInput } from '../workflows/types.ts';
import { checkActor, checkText } from './audit.ts';
import { OPEN_RUN_STATUSES } from './runs.ts';
import { compensationIdOf, startCompensationWorkflow } from './start-compensation.ts';
import type { DurableFetchContext } from './start-fetch.ts';
import { recordAudit } from '../db/audit.ts';
import { isUuid } from './ids.ts';

export type { AuditEntry, DownstreamState };

/** `target_type` of the audit entries about a ledger row. */
export const COMPENSATION_TARGET = 'downstream_action';

/** Longest `--note` (resolve) or `--reason` (retry) kept. */
export const MAX_NOTE_LENGTH = 1000;

/** States `compensations retry` takes: needs_manual, and unsettled rows nothing works on. */
const RETRYABLE_STATES: readonly DownstreamState[] = [
  'needs_manual',
  'attempting',
  'unknown',
  'confirmed',
  'compensating',
];

/** Run statuses during which the run's own workflow may still act on its ledger rows. */

/** True when `id` has the shape of a ledger row id (a UUID). */
export function isCompensationId(id: string): boolean {
  return isUuid(id);
}

/** A ledger row with the business key of its run (`businessDate` written `YYYY-MM-DD`). */
export type Compensation = DownstreamAction & { sourceId: string; businessDate: string };

/** One row with its run, its audit trail (oldest first) and its compensation's workflow id. */
export type CompensationDetail = Compensation & {
  run: { id: string; sourceId: string; businessDate: string; status: RunStatus; workflowId: string };
  audit: AuditEntry[];
  /** `compensate/fetch-records/<source>/<date>/r<round>`: the workflow that undoes the claim's actions. */
  compensationWorkflowId: string;
};

export interface ListCompensationsFilter {
  state?: DownstreamState;
  sourceId?: string;
  /** Only strays: effects at the partner the ledger did not expect (voided by the compensation path). */
  strays?: boolean;
  /** Newest `updatedAt` first; default 50, at most 1000. */
  limit?: number;
}

type PrismaCtx = Pick<DurableFetchContext, 'prisma'>;

const RUN_KEY = { select: { sourceId: true, businessDate: true } } as const;

function flatten(row: DownstreamAction & { run: { sourceId: string; businessDate: Date } }): Compensation {
  const { run, ...rest } = row;
  return { ...rest, sourceId: run.sourceId, businessDate: dateText(run.businessDate) };
}

function dateText(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** Ledger rows, most recently changed first. Read-only. */
export async function listCompensations(
  ctx: PrismaCtx,
  filter: ListCompensationsFilter = {},
): Promise<Compensation[]> {
  const rows = await ctx.prisma.downstreamAction.findMany({
    where: {
      state: filter.state,
      ...(filter.sourceId === undefined ? {} : { run: { sourceId: filter.sourceId } }),
      ...(filter.strays ? { strayOf: { not: null } } : {}),
    },
    include: { run: RUN_KEY },
    orderBy: [{ updatedAt: 'desc' }, { id: 'asc' }],
    take: Math.min(Math.max(filter.limit ?? 50, 1), 1000),
  });
  return rows.map(flatten);
}

/**
 * One ledger row by id, with its run and audit trail; undefined when there is none (or `id` is not
 * a UUID). Read-only.
 */
export async function getCompensation(ctx: PrismaCtx, id: string): Promise<CompensationDetail | undefined> {
  if (!isCompensationId(id)) return undefined;
  const row = await ctx.prisma.downstreamAction.findUnique({
    where: { id },
    include: {
      run: {
        select: {
          id: true,
          jobType: true,
          sourceId: true,
          businessDate: true,
          status: true,
          workflowId: true,
        },
      },
    },
  });
  if (!row) return undefined;
  const audit = await ctx.prisma.auditEntry.findMany({
    where: { targetType: COMPENSATION_TARGET, targetId: row.id },
    orderBy: [{ at: 'asc' }, { id: 'asc' }],
  });
  const businessDate = dateText(row.run.businessDate);
  return {
    ...flatten(row),
    run: { ...row.run, businessDate },
    audit,
    compensationWorkflowId: compensationIdOf(row.run.jobType, {
      sourceId: row.run.sourceId,
      businessDate,
      round: row.round,
    }),
  };
}

/**
 * Rows waiting for an operator (`needs_manual`), optionally of one source. This is the number to
 * alert on: issue #8 exports it as a metric (a gauge that should be 0). Read-only.
 */
export async function countNeedsManual(ctx: PrismaCtx, filter: { sourceId?: string } = {}): Promise<number> {
  return ctx.prisma.downstreamAction.count({
    where: {
      state: 'needs_manual',
      ...(filter.sourceId === undefined ? {} : { run: { sourceId: filter.sourceId } }),
    },
  });
}

type LoadedRow = DownstreamAction & {
  run: {
    id: string;
    jobType: string;
    sourceId: string;
    businessDate: Date;
    status: RunStatus;
    workflowId: string;
  };
};

async function loadRow(ctx: PrismaCtx, id: string): Promise<LoadedRow> {
  const row = isCompensationId(id)
    ? await ctx.prisma.downstreamAction.findUnique({
        where: { id },
        include: {
          run: {
            select: {
              id: true,
              jobType: true,
              sourceId: true,
              businessDate: true,
              status: true,
              workflowId: true,
            },
          },
        },
      })
    : null;
  if (!row) throw new UserFacingError(`no compensation '${id}'`, 'NOT_FOUND');
  return row;
}

function notNeedsManual(id: string, state: string, verb: 'resolved' | 'retried'): UserFacingError {
  return new UserFacingError(
    `compensation ${id} is ${state}: only needs_manual can be ${verb}`,
    'INVALID_STATE',
  );
}

/** The row's state now, for the message of a conditional update that matched nothing. */
async function stateNow(ctx: PrismaCtx, id: string): Promise<string> {
  const row = await ctx.prisma.downstreamAction.findUnique({ where: { id }, select: { state: true } });
  return row?.state ?? 'gone';
}

export interface ResolveOptions {
  /** What was done by hand and why (1..1000 characters); kept on the row and in the audit trail. */
  note: string;
  /** Who did it. */
  actor: string;
}

export interface Resolved {
  compensation: Compensation;
  previousState: 'needs_manual';
  /** The run's status afterwards: `compensated` once none of its actions is unsettled. */
  runStatus: string;
}

/**
 * Records that a human settled a `needs_manual` row (e.g. voided the submission in the partner's
 * portal, or established it never existed): the row becomes `resolved` with who, when and why, and
 * an audit entry `compensation.resolve` is written in the same transaction. Then the run is
 * settled: it becomes `compensated` when none of its actions is unsettled any more.
 * Calls no partner.
 * @throws UserFacingError NOT_FOUND, INVALID_STATE (the row is not `needs_manual`; nothing is
 *   changed), INVALID_INPUT (empty or too long note or actor).
 */
export async function resolveCompensation(
  ctx: PrismaCtx,
  id: string,
  options: ResolveOptions,
): Promise<Resolved> {
  const note = checkText(options.note, 'the note (--note)', MAX_NOTE_LENGTH);
  const actor = checkActor(options.actor);
  const row = await loadRow(ctx, id);
  if (row.state !== 'needs_manual') throw notNeedsManual(row.id, row.state, 'resolved');
  const updated = await ctx.prisma.$transaction(async (tx) => {
    const changed = await tx.$queryRaw<{ partner_id: string | null }[]>`
      UPDATE downstream_action
         SET state = 'resolved', resolved_at = now(), resolved_by = ${actor}, resolution_note = ${note},
             updated_at = now()
       WHERE id = ${row.id}::uuid AND state = 'needs_manual'
      RETURNING partner_id`;
    const first = changed[0];
    if (!first) return undefined;
    await recordAudit(tx, {
      actor,
      action: 'compensation.resolve',
      targetType: COMPENSATION_TARGET,
      targetId: row.id,
      reason: note,
      details: { from: 'needs_manual', partnerId: first.partner_id },
    });
    // In the same transaction: a resolved row and a run still waiting for it never coexist.
    const { status } = await settleRun(tx, row.fetchRunId);
    const action = await tx.downstreamAction.findUniqueOrThrow({
      where: { id: row.id },
      include: { run: RUN_KEY },
    });
    return { action, status };
  });
  if (!updated) throw notNeedsManual(row.id, await stateNow(ctx, row.id), 'resolved');
  return { compensation: flatten(updated.action), previousState: 'needs_manual', runStatus: updated.status };
}

export interface RetryOptions {
  /** Who asked. */
  actor: string;
  /** Why (kept in the audit trail), e.g. "partner back up". */
  reason?: string;
}

export interface RetriedCompensation {
  /** `compensate/fetch-records/<source>/<date>/r<round>` */
  workflowId: string;
  /** Temporal run id of the compensation started. */
  runId: string;
  taskQueue: string;
  /** What the row was set to: `confirmed` (partner id known) or `unknown` for a needs_manual row, else its state. */
  state: DownstreamState;
}

/**
 * Runs the compensation of a `needs_manual` row's claim again (after its cause was fixed, e.g.
 * the partner is reachable again): the row goes back to `confirmed` (its partner id is known: it
 * is voided) or `unknown` (it is looked up first), an audit entry `compensation.retry` is written
 * in the same transaction, then `compensateRunWorkflow` is started under the key's compensation
 * workflow id, on the task queue of the run's own workflow (or `ctx.taskQueue` when that cannot be
 * told). Refused while the run is still active or a compensation of its key is running. Should the
 * start fail, the row is put back to `needs_manual` (and that is audited too).
 * @throws UserFacingError NOT_FOUND, INVALID_STATE, RUN_ACTIVE, COMPENSATION_RUNNING, INVALID_INPUT,
 *   START_FAILED.
 */
export async function retryCompensation(
  ctx: Pick<DurableFetchContext, 'prisma' | 'temporal' | 'taskQueue'>,
  id: string,
  options: RetryOptions,
): Promise<RetriedCompensation> {
  const actor = checkActor(options.actor);
  const reason =
    options.reason === undefined ? null : checkText(options.reason, 'the reason (--reason)', MAX_NOTE_LENGTH);
  const row = await loadRow(ctx, id);
  // needs_manual, or left unsettled with nothing working on it (a compensation that never
  // started: its run was terminated, or its start failed).
  if (!RETRYABLE_STATES.includes(row.state)) {
    throw new UserFacingError(
      `compensation ${row.id} is ${row.state}: only needs_manual (or an unsettled row nothing works on) can be retried`,
      'INVALID_STATE',
    );
  }
  const { run } = row;
  if (OPEN_RUN_STATUSES.includes(run.status)) {
    throw new UserFacingError(
      `run ${run.id} is ${run.status}: its own workflow may still act on it; retry once it ends`,
      'RUN_ACTIVE',
    );
  }
  const businessDate = dateText(run.businessDate);
  const workflowId = compensationIdOf(run.jobType, {
    sourceId: run.sourceId,
    businessDate,
    round: row.round,
  });
  if (await isRunning(ctx.temporal, workflowId)) {
    throw new UserFacingError(
      `a compensation of ${row.businessKey} is running (${workflowId}); retry once it ends`,
      'COMPENSATION_RUNNING',
    );
  }
  const from = row.state;
  const to = from !== 'needs_manual' ? from : row.partnerId ? 'confirmed' : 'unknown';
  const changed = await ctx.prisma.$transaction(async (tx) => {
    const n = await tx.$executeRaw`
      UPDATE downstream_action SET state = ${to}::downstream_state, updated_at = now()
       WHERE id = ${row.id}::uuid AND state = ${from}::downstream_state`;
    if (n !== 1) return false;
    await recordAudit(tx, {
      actor,
      action: 'compensation.retry',
      targetType: COMPENSATION_TARGET,
      targetId: row.id,
      reason,
      details: { from, to, partnerId: row.partnerId, workflowId },
    });
    return true;
  });
  if (!changed) throw notNeedsManual(row.id, await stateNow(ctx, row.id), 'retried');

  const taskQueue = await taskQueueOf(ctx, run.workflowId);
  const input: CompensateRunInput = {
    fetchRunId: run.id,
    sourceId: run.sourceId,
    businessDate,
    round: row.round,
    reason: 'operator',
  };
  try {
    const handle = await startCompensationWorkflow(ctx.temporal, run.jobType, input, taskQueue, 'operator');
    return { workflowId, runId: handle.firstExecutionRunId, taskQueue, state: to };
  } catch (err) {
    await putBack(ctx, row.id, to, actor, err);
    throw new UserFacingError(
      `could not start the compensation ${workflowId}: ${errorMessage(err)}; compensation ${row.id} is needs_manual again`,
      'START_FAILED',
      { cause: err },
    );
  }
}

/** True when the workflow `workflowId` exists and is running. */
async function isRunning(temporal: Client, workflowId: string): Promise<boolean> {
  try {
    const description = await temporal.workflow.getHandle(workflowId).describe();
    return description.status.name === 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** The task queue of the run's own workflow (its worker knows the compensation), else the default. */
async function taskQueueOf(
  ctx: Pick<DurableFetchContext, 'temporal' | 'taskQueue'>,
  runWorkflowId: string,
): Promise<string> {
  try {
    return (await ctx.temporal.workflow.getHandle(runWorkflowId).describe()).taskQueue;
  } catch {
    return ctx.taskQueue;
  }
}

/** A retry whose workflow did not start: the row waits for an operator again. */
async function putBack(ctx: PrismaCtx, id: string, from: string, actor: string, err: unknown): Promise<void> {
  await ctx.prisma.$transaction(async (tx) => {
    const n = await tx.$executeRaw`
      UPDATE downstream_action SET state = 'needs_manual', updated_at = now()
       WHERE id = ${id}::uuid AND state = ${from}::downstream_state`;
    if (n !== 1) return;
    const details: Prisma.InputJsonObject = { from, to: 'needs_manual' };
    await recordAudit(tx, {
      actor,
      action: 'compensation.retry_failed',
      targetType: COMPENSATION_TARGET,
      targetId: id,
      reason: errorMessage(err).slice(0, MAX_NOTE_LENGTH),
      details,
    });
  });
}
