/**
 * `compensations retry`: an operator runs a claim's compensation again once the cause of its
 * `needs_manual` row is fixed (or starts one that never ran for an unsettled row).
 *
 * Be very careful: every state change here is a conditional UPDATE on the state the row was read
 * in (db/ledger/operator.ts), like the activities' (activities/downstream/index.ts), so an
 * operator racing a compensation (or another operator) can never move a row backwards, and each is
 * audited in its own transaction.
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { recordAudit } from '../../db/audit.ts';
import { moveForRetry, putBackNeedsManual } from '../../db/ledger/operator.ts';
import type { DownstreamState, Prisma } from '../../prisma/generated/client.ts';
import { errorMessage, UserFacingError } from '../../runtime/errors.ts';
import type { CompensateRunInput } from '../../contract/types.ts';
import { checkActor, checkText } from '../audit.ts';
import { OPEN_RUN_STATUSES } from '../runs.ts';
import { compensationIdOf, startCompensationWorkflow } from './start.ts';
import type { DurableFetchContext } from '../start-fetch.ts';
import {
  COMPENSATION_TARGET,
  dateText,
  loadRow,
  MAX_NOTE_LENGTH,
  notNeedsManual,
  type PrismaCtx,
  stateNow,
} from './common.ts';

/** States `compensations retry` takes: needs_manual, and unsettled rows nothing works on. */
const RETRYABLE_STATES: readonly DownstreamState[] = [
  'needs_manual',
  'attempting',
  'unknown',
  'confirmed',
  'compensating',
];

export interface RetryOptions {
  /** Who asked. */
  actor: string;
  /** Why (kept in the audit trail), e.g. "partner back up". */
  reason?: string;
}

export interface RetriedCompensation {
  /** `compensate/<jobType>/<source>/<date>/r<round>` */
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
    if (!(await moveForRetry(tx, row.id, from, to))) return false;
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
    if (!(await putBackNeedsManual(tx, id, from))) return;
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
