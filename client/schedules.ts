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
  type ScheduleSummary,
  ServiceError,
} from '@temporalio/client';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { UserFacingError } from '../runtime/errors.ts';
// Where a business day starts lives with the business dates; re-exported for the CLI.
export { startOfDayIn } from '../contract/business-date.ts';
import {
  type DesiredSchedule,
  desiredSchedule,
  legacyScheduleIdFor,
  parseScheduleId,
  scheduleIdFor,
  TRIGGER_WORKFLOW_TYPE,
} from './schedule-spec.ts';

export {
  legacyScheduleIdFor,
  OVERLAP_POLICIES,
  parseScheduleId,
  scheduleIdFor,
  type ScheduleKey,
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
  /** `migrated`: the source's schedule moved from its legacy id ({@link SyncChange.from}) to `scheduleId`. */
  change: 'created' | 'updated' | 'migrated' | 'deleted' | 'unchanged';
  /** The legacy id a `migrated` schedule had (`<taskQueue>/fetch-records/<sourceId>`). */
  from?: string;
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

/** The schedule `scheduleId` as Temporal describes it; undefined when there is none. */
async function describeSchedule(
  ctx: SyncContext,
  scheduleId: string,
): Promise<ScheduleDescription | undefined> {
  try {
    return await ctx.temporal.schedule.getHandle(scheduleId).describe();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return undefined;
    throw err;
  }
}

/**
 * Creates or updates one schedule to be `d`, migrating it from its legacy id first when it still
 * has one; `source` is its row (for its pause).
 */
async function applySchedule(
  ctx: SyncContext,
  d: DesiredSchedule,
  source: PausedSource,
  dryRun: boolean,
): Promise<SyncChange> {
  const handle = ctx.temporal.schedule.getHandle(d.scheduleId);
  const current = await describeSchedule(ctx, d.scheduleId);
  const change = { scheduleId: d.scheduleId, sourceId: d.sourceId };
  const legacyId = legacyScheduleIdFor(ctx.taskQueue, d.sourceId);
  if (legacyId !== d.scheduleId) {
    const legacy = await describeSchedule(ctx, legacyId);
    if (legacy !== undefined || (current !== undefined && migratingFrom(current) !== undefined)) {
      if (!dryRun) await migrate(ctx, d, { current, legacyId, legacy });
      return { ...change, change: 'migrated', from: legacyId };
    }
  }
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

/** A schedule's state as a migration carries it from the legacy schedule to the new one. */
type CarriedState = { paused: boolean; note?: string };

const MIGRATING = 'durable-fetch: migrating from ';

/** The note of a schedule being migrated: paused, it names the legacy one and carries its state. */
function migrationNote(legacyId: string, was: CarriedState): string {
  return `${MIGRATING}${legacyId}; it was ${JSON.stringify(was)}`;
}

/** The state a migration carries, when `d` is a new schedule a migration left paused; else undefined. */
function migratingFrom(d: ScheduleDescription): CarriedState | undefined {
  const note = d.state.note ?? '';
  if (!d.state.paused || !note.startsWith(MIGRATING)) return undefined;
  try {
    const was = JSON.parse(note.slice(note.indexOf('; it was ') + '; it was '.length)) as CarriedState;
    return { paused: was.paused === true, ...(typeof was.note === 'string' ? { note: was.note } : {}) };
  } catch {
    return undefined;
  }
}

/**
 * Moves a source's schedule from its legacy id to its new one, keeping its state (a paused one
 * stays paused, with its note). Crash-safe and idempotent, and never two schedules of the source
 * able to fire at once: while the legacy schedule exists it is the source's schedule (lookups
 * prefer it) and the new one is paused, carrying the legacy one's state in its note; the legacy
 * one is then deleted, and only then does the new one take that state. A sync that dies anywhere
 * in between is finished by the next: from the legacy one while it exists, else from the note.
 */
async function migrate(
  ctx: SyncContext,
  d: DesiredSchedule,
  at: { current: ScheduleDescription | undefined; legacyId: string; legacy: ScheduleDescription | undefined },
): Promise<void> {
  const handle = ctx.temporal.schedule.getHandle(d.scheduleId);
  let was: CarriedState | undefined;
  if (at.legacy !== undefined) {
    was = {
      paused: at.legacy.state.paused,
      ...(at.legacy.state.note === undefined ? {} : { note: at.legacy.state.note }),
    };
    const waiting = { paused: true, note: migrationNote(at.legacyId, was) };
    if (at.current === undefined) {
      await refused(d, () => ctx.temporal.schedule.create({ ...d.options, state: waiting }));
    } else {
      await refused(d, () => handle.update(() => ({ ...d.options, state: waiting })));
    }
    await dropSchedule(ctx, at.legacyId, false);
  } else if (at.current !== undefined) {
    was = migratingFrom(at.current);
  }
  if (was === undefined) return;
  const state = was;
  await refused(d, () => handle.update(() => ({ ...d.options, state })));
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
  // A migrated schedule's legacy id is accounted for too (still listed, or still there when dry).
  const keep = new Set(
    wanted.flatMap((w) => [w.d.scheduleId, legacyScheduleIdFor(ctx.taskQueue, w.d.sourceId)]),
  );
  for await (const summary of ctx.temporal.schedule.list()) {
    const owned = parseScheduleId(ctx.taskQueue, summary.scheduleId);
    if (owned === undefined || !isTrigger(summary) || keep.has(summary.scheduleId)) continue;
    // Listing lags behind: a schedule deleted a moment ago may still be listed. Only one that
    // still exists counts (and, unless dry, is deleted now).
    if (!(await dropSchedule(ctx, summary.scheduleId, dryRun))) continue;
    changes.push({ scheduleId: summary.scheduleId, sourceId: owned.id, change: 'deleted' });
  }
  return changes;
}

/** Whether a listed schedule starts the trigger workflow, as every schedule sync makes does. */
function isTrigger(summary: ScheduleSummary): boolean {
  return summary.action === undefined || summary.action.workflowType === TRIGGER_WORKFLOW_TYPE;
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
  const row = await ctx.prisma.source.findUnique({ where: { id: sourceId } });
  if (!row || !row.enabled || row.removedAt !== null || row.schedule === null) {
    // Either id: a legacy one not migrated yet, or the new one.
    const ids = [
      ...new Set([
        ...(row ? [scheduleIdFor(ctx.taskQueue, row)] : []),
        legacyScheduleIdFor(ctx.taskQueue, sourceId),
      ]),
    ];
    let deleted: string | undefined;
    for (const id of ids) if (await dropSchedule(ctx, id, false)) deleted ??= id;
    return deleted === undefined ? undefined : { scheduleId: deleted, sourceId, change: 'deleted' };
  }
  const d = desiredSchedule(row, ctx.taskQueue, ctx.maxFutureDays ?? 0);
  if ('problem' in d) throw new UserFacingError(d.problem, 'INVALID_SCHEDULE');
  return applySchedule(ctx, d, row, false);
}

/**
 * The id of the schedule of source `sourceId` on this deployment: its legacy id
 * (`<taskQueue>/fetch-records/<sourceId>`) while a schedule of that id exists — until
 * `schedules sync` migrates it, that one is the source's schedule — else
 * `<taskQueue>/<jobType>/<sourceId>` (whether or not it exists). A source without a row (never
 * added) gets its legacy id. Reads only (the source row, and Temporal for a job other than
 * `fetch-records`).
 */
export async function findScheduleId(
  ctx: Pick<SyncContext, 'temporal' | 'prisma' | 'taskQueue'>,
  sourceId: string,
): Promise<string> {
  const legacyId = legacyScheduleIdFor(ctx.taskQueue, sourceId);
  const row = await ctx.prisma.source.findUnique({
    where: { id: sourceId },
    select: { id: true, jobType: true },
  });
  if (!row) return legacyId;
  const scheduleId = scheduleIdFor(ctx.taskQueue, row);
  if (scheduleId === legacyId) return scheduleId;
  return (await describeSchedule(ctx, legacyId)) ? legacyId : scheduleId;
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
