/**
 * Pausing and resuming a source (R11 "pause consumption"). Pausing a source stops it everywhere:
 * its Temporal Schedule is paused, new starts are refused (`prepareFetch`, `enqueueFetch`), a run
 * already queued waits before its first page, and a running run waits at its next page boundary
 * (workflows/fetch-records.ts reads the pause in each page's transaction). Resuming clears the
 * pause, unpauses the schedule and signals the waiting runs.
 *
 * Be very careful: the database is the system of record of a pause. It is written first; the
 * schedule and the signals follow, and a run that missed a signal still sees the pause lifted at
 * its next periodic check.
 */
import { ScheduleNotFoundError, WorkflowNotFoundError } from '@temporalio/client';
import type { Source } from '../../prisma/generated/client.ts';
import { recordAudit } from '../../db/audit.ts';
import { LIVE_RUN_STATUSES } from '../../contract/states.ts';
import { errorMessage, UserFacingError } from '../../runtime/errors.ts';
import { SOURCE_RESUMED_SIGNAL } from '../../contract/types.ts';
import { checkActor } from '../audit.ts';
import { findScheduleId } from '../schedules.ts';
import {
  checkReason,
  countRunning,
  changeLiveSource,
  oneLine,
  SOURCE_TARGET,
  type TemporalCtx,
} from './common.ts';
import { pauseText } from './read.ts';

export interface PauseOptions {
  /** Why (1..1000 characters): kept on the source, on its schedule and in the audit trail. */
  reason: string;
  /** Who. */
  actor: string;
}

export interface PausedSource {
  source: Source;
  /** `<taskQueue>/<jobType>/<sourceId>`, or its legacy id until `schedules sync` migrates it. */
  scheduleId: string;
  /** True when the source has a Temporal Schedule (on this task queue) and it is now paused. */
  schedulePaused: boolean;
  /** Live runs of the source (`running`, `retry_wait`): each stops at its next page boundary and waits. */
  runningRuns: number;
}

/**
 * Pauses a source: sets `paused_at/paused_reason/paused_by` and writes the audit entry
 * `source.pause` in one transaction (only when it is not paused already), then pauses its Temporal
 * Schedule, if it has one. From then on new starts of the source are refused, and its running runs
 * stop at their next page boundary and wait, durably, until it is resumed (or they are cancelled).
 * @throws UserFacingError NOT_FOUND, SOURCE_REMOVED, ALREADY_PAUSED (nothing is changed), INVALID_INPUT (empty or
 *   too long reason or actor), SCHEDULE_PAUSE_FAILED (the source is paused, its schedule is not).
 */
export async function pauseSource(
  ctx: TemporalCtx,
  id: string,
  options: PauseOptions,
): Promise<PausedSource> {
  const reason = checkReason(options.reason);
  const actor = checkActor(options.actor);
  // Its legacy id while `schedules sync` has not migrated it yet.
  const scheduleId = await findScheduleId(ctx, id);
  const outcome = await changeLiveSource(ctx, id, async (tx, current) => {
    if (current.pausedAt) return { kind: 'paused' as const, current };
    const pausedAt = new Date();
    const n = await tx.source.updateMany({
      where: { id, pausedAt: null },
      data: { pausedAt, pausedReason: reason, pausedBy: actor },
    });
    if (n.count !== 1) return { kind: 'paused' as const, current };
    await recordAudit(tx, {
      actor,
      action: 'source.pause',
      targetType: SOURCE_TARGET,
      targetId: id,
      reason,
      details: { pausedAt: pausedAt.toISOString(), scheduleId },
    });
    return { kind: 'done' as const, source: await tx.source.findUniqueOrThrow({ where: { id } }) };
  });
  if (outcome.kind === 'paused') {
    throw new UserFacingError(`source '${id}' is already ${pauseText(outcome.current)}`, 'ALREADY_PAUSED');
  }
  let schedulePaused: boolean;
  try {
    await ctx.temporal.schedule.getHandle(scheduleId).pause(`paused with source ${id}: ${reason}`);
    schedulePaused = true;
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) {
      throw new UserFacingError(
        `source '${id}' is paused (new and running runs wait), but its schedule ${scheduleId} could not be paused: ${oneLine(errorMessage(err))}; pause it with \`durable-fetch schedules pause ${id} --reason …\``,
        'SCHEDULE_PAUSE_FAILED',
        { cause: err },
      );
    }
    schedulePaused = false;
  }
  return { source: outcome.source, scheduleId, schedulePaused, runningRuns: await countRunning(ctx, id) };
}

export interface ResumeOptions {
  /** Who. */
  actor: string;
  /** Why (kept in the audit trail). */
  reason?: string;
}

export interface ResumedSource {
  source: Source;
  scheduleId: string;
  /** True when the source's schedule was paused and is now unpaused. */
  scheduleResumed: boolean;
  /** Live runs of the source (waiting, or about to notice the pause was lifted). */
  runningRuns: number;
  /** Of those, how many workflows received the resume signal (the rest had ended meanwhile). */
  signalled: number;
  /** The pause that was lifted. */
  was: { pausedAt: Date; pausedBy: string | null; pausedReason: string | null };
}

/**
 * Resumes a paused source: clears the pause and writes the audit entry `source.resume` in one
 * transaction, unpauses its schedule (when it has one and it is paused), and signals
 * `sourceResumed` to the workflow of each of its running runs, so that those waiting at a page
 * boundary go on at once (a run that misses the signal sees the pause lifted at its next check).
 * @throws UserFacingError NOT_FOUND, SOURCE_REMOVED, NOT_PAUSED (nothing is changed), INVALID_INPUT,
 *   SCHEDULE_RESUME_FAILED (the source is resumed, its schedule is still paused).
 */
export async function resumeSource(
  ctx: TemporalCtx,
  id: string,
  options: ResumeOptions,
): Promise<ResumedSource> {
  const actor = checkActor(options.actor);
  const reason = options.reason === undefined ? null : checkReason(options.reason);
  // Its legacy id while `schedules sync` has not migrated it yet.
  const scheduleId = await findScheduleId(ctx, id);
  const outcome = await changeLiveSource(ctx, id, async (tx, current) => {
    const { pausedAt, pausedBy, pausedReason } = current;
    if (!pausedAt) return { kind: 'not-paused' as const };
    const n = await tx.source.updateMany({
      where: { id, pausedAt: { not: null } },
      data: { pausedAt: null, pausedReason: null, pausedBy: null },
    });
    if (n.count !== 1) return { kind: 'not-paused' as const };
    await recordAudit(tx, {
      actor,
      action: 'source.resume',
      targetType: SOURCE_TARGET,
      targetId: id,
      reason,
      details: { pausedAt: pausedAt.toISOString(), pausedBy, pausedReason },
    });
    return {
      kind: 'done' as const,
      source: await tx.source.findUniqueOrThrow({ where: { id } }),
      was: { pausedAt, pausedBy, pausedReason },
    };
  });
  if (outcome.kind === 'not-paused') throw new UserFacingError(`source '${id}' is not paused`, 'NOT_PAUSED');

  let scheduleResumed = false;
  const handle = ctx.temporal.schedule.getHandle(scheduleId);
  try {
    const description = await handle.describe();
    if (description.state.paused) {
      await handle.unpause(`resumed with source ${id}${reason ? `: ${reason}` : ''}`);
      scheduleResumed = true;
    }
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) {
      throw new UserFacingError(
        `source '${id}' is resumed (its runs go on), but its schedule ${scheduleId} could not be unpaused: ${oneLine(errorMessage(err))}; resume it with \`durable-fetch schedules resume ${id}\``,
        'SCHEDULE_RESUME_FAILED',
        { cause: err },
      );
    }
  }

  const running = await ctx.prisma.fetchRun.findMany({
    // A run waiting for a step's retry may be waiting at a page boundary too.
    where: { sourceId: id, status: { in: [...LIVE_RUN_STATUSES] } },
    select: { workflowId: true },
  });
  let signalled = 0;
  for (const { workflowId } of running) {
    try {
      // The current execution of the business key (continue-as-new changes the run id).
      await ctx.temporal.workflow.getHandle(workflowId).signal(SOURCE_RESUMED_SIGNAL);
      signalled++;
    } catch (err) {
      // Ended meanwhile: nothing waits for the signal.
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }
  return {
    source: outcome.source,
    scheduleId,
    scheduleResumed,
    runningRuns: running.length,
    signalled,
    was: outcome.was,
  };
}
