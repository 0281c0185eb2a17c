/**
 * Declarative schedules (R6): each source's `schedule` says when it runs; `syncSchedules`
 * makes Temporal's Schedules match — create, update, delete — and is idempotent. Each schedule
 * starts `scheduledFetchWorkflow` (workflows/scheduled-fetch.ts), which derives the business date
 * from the schedule's nominal time and runs the business-key workflow, so a scheduled run, a CLI
 * run and an app-client start of the same date are one FetchRun. What a schedule is built from:
 * client/schedule-spec.ts.
 */
import {
  type Client,
  type ScheduleDescription,
  ScheduleNotFoundError,
  ServiceError,
} from '@temporalio/client';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { UserFacingError } from '../runtime/errors.ts';
// Where a business day starts lives with the business dates; re-exported for the CLI.
export { startOfDayIn } from '../contract/business-date.ts';
import { type DesiredSchedule, desiredSchedule, scheduleIdFor, schedulePrefix } from './schedule-spec.ts';

export {
  OVERLAP_POLICIES,
  resolveScheduleId,
  scheduleIdFor,
  sourceScheduleSchema,
  type SourceSchedule,
} from './schedule-spec.ts';

/** Runs a create/update; Temporal refusing it (e.g. a cron it can't parse) is the user's error. */
async function refused(d: DesiredSchedule, call: () => Promise<unknown>): Promise<void> {
  try {
    await call();
  } catch (err) {
    // The SDK turns the server's "Invalid schedule spec" (a cron it cannot parse) into a
    // TypeError carrying the server's words; other refusals arrive as a ServiceError.
    if (err instanceof ServiceError || err instanceof TypeError) {
      const why = err instanceof ServiceError ? (err.cause?.message ?? err.message) : err.message;
      throw new UserFacingError(
        `source '${d.sourceId}': Temporal refused its schedule: ${why}`,
        'INVALID_SCHEDULE',
      );
    }
    throw err;
  }
}

function fingerprintOf(description: ScheduleDescription): string | undefined {
  const action = description.action as { memo?: Record<string, unknown> };
  const value = action.memo?.durableFetchSchedule;
  return typeof value === 'string' ? value : undefined;
}

export interface SyncChange {
  scheduleId: string;
  sourceId: string;
  change: 'created' | 'updated' | 'deleted' | 'unchanged';
}

export interface SyncContext {
  temporal: Client;
  prisma: Pick<PrismaClient, 'source'>;
  taskQueue: string;
  /** The future-date policy (DURABLE_FETCH_MAX_FUTURE_DAYS): the largest `dateOffsetDays`. Default 0. */
  maxFutureDays?: number;
}

/** The sources that may have a schedule: enabled and not removed (and then only with a `schedule`). */
const SCHEDULED = { enabled: true, removedAt: null } as const;

type PausedSource = { pausedAt: Date | null; pausedReason: string | null };

/** Creates or updates one schedule to be `d`; `source` is its row (for its pause). */
async function applySchedule(
  ctx: SyncContext,
  d: DesiredSchedule,
  source: PausedSource,
  dryRun: boolean,
): Promise<SyncChange> {
  const handle = ctx.temporal.schedule.getHandle(d.scheduleId);
  let current: ScheduleDescription | undefined;
  try {
    current = await handle.describe();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
  const change = { scheduleId: d.scheduleId, sourceId: d.sourceId };
  if (!current) {
    // A source an operator paused (`sources pause`) gets its schedule paused from the start.
    const state = source.pausedAt
      ? { state: { paused: true, note: `paused with source ${d.sourceId}: ${source.pausedReason ?? ''}` } }
      : {};
    if (!dryRun) await refused(d, () => ctx.temporal.schedule.create({ ...d.options, ...state }));
    return { ...change, change: 'created' };
  }
  if (fingerprintOf(current) === d.fingerprint) return { ...change, change: 'unchanged' };
  if (!dryRun) {
    // The operator's pause (and its note) survives a config change.
    await refused(d, () =>
      handle.update((prev) => ({
        ...d.options,
        state: { paused: prev.state.paused, note: prev.state.note },
      })),
    );
  }
  return { ...change, change: 'updated' };
}

/** Deletes one schedule (describes it when `dryRun`); false when there is none. */
async function dropSchedule(ctx: SyncContext, scheduleId: string, dryRun: boolean): Promise<boolean> {
  const handle = ctx.temporal.schedule.getHandle(scheduleId);
  return (dryRun ? handle.describe() : handle.delete()).then(
    () => true,
    (err: unknown) => {
      if (err instanceof ScheduleNotFoundError) return false;
      throw err;
    },
  );
}

/**
 * Makes Temporal's Schedules match the sources' `schedule` columns: creates missing ones, updates
 * changed ones (keeping an operator's pause), deletes ours whose source is gone, disabled, removed
 * or has no schedule any more. Idempotent: a second run reports every schedule `unchanged`. With
 * `dryRun`, reports what it would do and changes nothing.
 * @throws UserFacingError INVALID_SCHEDULE naming every source whose schedule is invalid (then
 *   nothing is changed).
 */
export async function syncSchedules(
  ctx: SyncContext,
  opts: { dryRun?: boolean } = {},
): Promise<SyncChange[]> {
  const dryRun = opts.dryRun === true;
  const sources = await ctx.prisma.source.findMany({ where: SCHEDULED, orderBy: { id: 'asc' } });
  const wanted: { d: DesiredSchedule; source: PausedSource }[] = [];
  const problems: string[] = [];
  for (const source of sources) {
    if (source.schedule === null) continue;
    const d = desiredSchedule(source, ctx.taskQueue, ctx.maxFutureDays ?? 0);
    if ('problem' in d) problems.push(d.problem);
    else wanted.push({ d, source });
  }
  if (problems.length > 0) throw new UserFacingError(problems.join('; '), 'INVALID_SCHEDULE');

  const changes: SyncChange[] = [];
  for (const { d, source } of wanted) changes.push(await applySchedule(ctx, d, source, dryRun));
  const keep = new Set(wanted.map((w) => w.d.scheduleId));
  const prefix = schedulePrefix(ctx.taskQueue);
  for await (const summary of ctx.temporal.schedule.list()) {
    if (!summary.scheduleId.startsWith(prefix) || keep.has(summary.scheduleId)) continue;
    // Listing lags behind: a schedule deleted a moment ago may still be listed. Only one that
    // still exists counts (and, unless dry, is deleted now).
    if (!(await dropSchedule(ctx, summary.scheduleId, dryRun))) continue;
    changes.push({
      scheduleId: summary.scheduleId,
      sourceId: summary.scheduleId.slice(prefix.length),
      change: 'deleted',
    });
  }
  return changes;
}

/**
 * `syncSchedules` for one source: creates or updates its schedule when the source wants one, and
 * deletes it otherwise (gone, disabled, removed, no schedule). Idempotent; touches no other
 * schedule. Returns undefined when there was nothing to create, update or delete.
 * @throws UserFacingError INVALID_SCHEDULE (its schedule is invalid; nothing is changed).
 */
export async function syncSourceSchedule(
  ctx: SyncContext,
  sourceId: string,
): Promise<SyncChange | undefined> {
  const source = await ctx.prisma.source.findFirst({ where: { id: sourceId, ...SCHEDULED } });
  const scheduleId = scheduleIdFor(ctx.taskQueue, sourceId);
  if (!source || source.schedule === null) {
    const deleted = await dropSchedule(ctx, scheduleId, false);
    return deleted ? { scheduleId, sourceId, change: 'deleted' } : undefined;
  }
  const d = desiredSchedule(source, ctx.taskQueue, ctx.maxFutureDays ?? 0);
  if ('problem' in d) throw new UserFacingError(d.problem, 'INVALID_SCHEDULE');
  return applySchedule(ctx, d, source, false);
}

/**
 * Syncs the schedules of `ids` with their committed rows again: what a change that synced them
 * inside its transaction does when that transaction did not commit. Returns the ids whose
 * schedule could not be put back (then `durable-fetch schedules sync` does it).
 */
export async function resyncSchedules(ctx: SyncContext, ids: readonly string[]): Promise<string[]> {
  const failed: string[] = [];
  for (const id of ids) await syncSourceSchedule(ctx, id).catch(() => failed.push(id));
  return failed;
}

/** What a message adds about the schedules `resyncSchedules` could not put back ('' when none). */
export function outOfLine(failed: readonly string[]): string {
  return failed.length > 0
    ? `; the schedules of ${failed.join(', ')} may be out of line: run \`durable-fetch schedules sync\``
    : '';
}
