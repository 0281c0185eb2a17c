/**
 * The stuck-run sweep: defence in depth for runs whose workflow closed without settling their
 * `fetch_run` row (a database outage while it recorded its end, a bug, an operator's Terminate in
 * the Web UI). Such a row says `running` forever: no dead letter, no compensation. The sweep finds
 * it (client/stuck-runs.ts, which `status` shares) and asks Temporal how the workflow really ended.
 *
 * Settling stuck runs: one sweep pass records how each stuck run's workflow really ended through
 * the normal path — `finishRun`'s own statement, then the claim's compensation when it left
 * downstream effects — with one audit entry per settled run.
 *
 * Be very careful: the settle is fenced by the lease token read with the candidate, so a run taken
 * up meanwhile by a new execution (which takes a new token) is left alone; and the compensation is
 * started by the sweeper whose settle changed the row, under the claim's workflow id (should that
 * fail, any worker's pass of owed compensations starts it later: worker/sweeps/owed-compensations.ts).
 * Any number of workers may sweep at once.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { recordAudit } from '../../db/audit.ts';
import { COMPENSABLE_STATES } from '../../contract/states.ts';
import { finishRunRow, observeRunFinished } from '../../activities/run/finish-run.ts';
import { errorMessage } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { Metrics } from '../../runtime/metrics/metrics.ts';
import { redactUrlsIn } from '../../runtime/redact.ts';
import type { FinishRunInput } from '../../contract/types.ts';
import { compensationIdOf, startCompensationWorkflow } from '../../client/compensations/start.ts';
import {
  DEFAULT_MAX_RUNS,
  type Found,
  publicView,
  scan,
  type StuckRun,
  type StuckRunsContext,
  type UncheckedRun,
} from '../../client/stuck-runs.ts';

/** `target_type` and `action` of the audit entry of a settled run. */
export const RUN_TARGET = 'fetch_run';
export const SETTLE_STUCK_ACTION = 'run.settle_stuck';

export interface SweepContext extends StuckRunsContext {
  /** Task queue for a compensation when the run's own workflow (and so its queue) is gone. */
  taskQueue: string;
  /** Who settles, in the audit trail: `system:sweep` in workers, the operator for the CLI. */
  actor: string;
  log: Logger;
  metrics: Metrics;
}

/** What the sweep did to one stuck run. */
export interface SweptRun extends StuckRun {
  /** `settled` here; `changed` meanwhile by someone else (another sweeper, a new execution); `failed`. */
  outcome: 'settled' | 'changed' | 'failed';
  deadLetterId: string | null;
  /** The claim's compensation, when the run left downstream effects to settle. */
  compensation: { workflowId: string; started: 'started' | 'already_running' | 'failed' } | null;
  error?: string;
}

export interface SweepReport {
  checked: number;
  runs: SweptRun[];
  unchecked: UncheckedRun[];
  /** Runs left stuck (failed to settle, compensation not started) plus runs not checked. */
  leftStuck: number;
}

/**
 * One sweep pass: settles every stuck run it finds (at most `maxRuns` candidates) and starts the
 * compensation of each that left downstream effects, writing one audit entry per settled run.
 * Idempotent and safe with many sweepers at once; an error on one run is logged, reported and the
 * pass goes on. @throws database errors of the candidate query only.
 */
export async function sweepStuckRuns(
  ctx: SweepContext,
  options: { maxRuns?: number } = {},
): Promise<SweepReport> {
  const runs: SweptRun[] = [];
  const scanned = await scan(ctx, options.maxRuns ?? DEFAULT_MAX_RUNS, async (run) => {
    runs.push(await settleOne(ctx, run));
  });
  for (const u of scanned.unchecked) {
    ctx.log.warn(u, 'stuck-run sweep: could not look the workflow of an expired run up');
  }
  const leftStuck =
    runs.filter((r) => r.outcome === 'failed' || r.compensation?.started === 'failed').length +
    scanned.unchecked.length;
  return { ...scanned, runs, leftStuck };
}

async function settleOne(ctx: SweepContext, run: Found): Promise<SweptRun> {
  const { settlement } = run;
  const input: FinishRunInput = {
    fetchRunId: run.fetchRunId,
    leaseToken: run.leaseToken,
    status: settlement.status,
    ...(settlement.errorType === undefined ? {} : { errorType: settlement.errorType }),
    ...(settlement.errorMessage === undefined ? {} : { errorMessage: settlement.errorMessage }),
    ...(settlement.errorCode === undefined ? {} : { errorCode: settlement.errorCode }),
  };
  const view = { ...publicView(run), deadLetterId: null, compensation: null };
  let settled;
  try {
    settled = await ctx.prisma.$transaction(async (tx) => {
      const row = await finishRunRow(tx, input);
      if (!row.finished) return { row, pending: 0 };
      const pending = await tx.downstreamAction.count({
        where: { fetchRunId: run.fetchRunId, round: run.round, state: { in: [...COMPENSABLE_STATES] } },
      });
      await recordAudit(tx, {
        actor: ctx.actor,
        action: SETTLE_STUCK_ACTION,
        targetType: RUN_TARGET,
        targetId: run.fetchRunId,
        reason: settlement.reason,
        details: {
          workflowId: run.workflowId,
          closedRunId: run.closedRunId,
          found: run.found,
          status: settlement.status,
          errorType: settlement.errorType ?? null,
          errorCode: settlement.errorCode ?? null,
          deadLetterId: row.deadLetterId,
          round: run.round,
          actionsToCompensate: pending,
        },
      });
      return { row, pending };
    });
  } catch (err) {
    const error = redactUrlsIn(errorMessage(err));
    ctx.log.error({ fetchRunId: run.fetchRunId, error }, 'stuck-run sweep: could not settle a stuck run');
    return { ...view, outcome: 'failed', error };
  }
  observeRunFinished(ctx, input, settled.row);
  if (!settled.row.finished) return { ...view, outcome: 'changed' };
  ctx.metrics.runsStuckSettled.inc({ outcome: run.found });
  const compensation = settled.pending > 0 ? await compensate(ctx, run) : null;
  ctx.log.warn(
    { fetchRunId: run.fetchRunId, workflowId: run.workflowId, found: run.found, status: settlement.status },
    `settled a stuck run: ${settlement.reason}`,
  );
  return { ...view, outcome: 'settled', deadLetterId: settled.row.deadLetterId, compensation };
}

/** Starts the claim's compensation as the run's workflow would have; one already open is fine. */
async function compensate(ctx: SweepContext, run: Found): Promise<NonNullable<SweptRun['compensation']>> {
  const input = {
    fetchRunId: run.fetchRunId,
    sourceId: run.sourceId,
    businessDate: run.businessDate,
    round: run.round,
    reason: run.settlement.status === 'cancelled' ? ('cancelled' as const) : ('failed' as const),
  };
  const workflowId = compensationIdOf(run.jobType, input);
  try {
    await startCompensationWorkflow(
      ctx.temporal,
      run.jobType,
      input,
      run.taskQueue ?? ctx.taskQueue,
      'sweep',
    );
    return { workflowId, started: 'started' };
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      return { workflowId, started: 'already_running' };
    ctx.log.error(
      { fetchRunId: run.fetchRunId, workflowId, error: redactUrlsIn(errorMessage(err)) },
      'stuck-run sweep: could not start the compensation (durable-fetch compensations retry)',
    );
    return { workflowId, started: 'failed' };
  }
}
