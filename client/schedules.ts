/**
 * Declarative schedules (issue #5, R6): each source's `schedule` says when it runs; `syncSchedules`
 * makes Temporal's Schedules match — create, update, delete — and is idempotent. Each schedule
 * starts `scheduledFetchWorkflow` (workflows/scheduled-fetch.ts), which derives the business date
 * from the schedule's nominal time and runs the business-key workflow, so a scheduled run, a CLI
 * run and an app-client start of the same date are one FetchRun.
 */
import { createHash } from 'node:crypto';
import {
  type Client,
  type ScheduleDescription,
  type ScheduleOptions,
  ScheduleNotFoundError,
  ServiceError,
  type ScheduleOverlapPolicy,
} from '@temporalio/client';
import { z } from 'zod';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { UserFacingError } from '../worker/errors.ts';
import { dateInTimeZone } from '../workflows/business-date.ts';
import { FETCH_RECORDS } from '../workflows/business-key.ts';
import type { ScheduledFetchInput } from '../workflows/scheduled-fetch.ts';
import { SEARCH_KEYS } from './start-fetch.ts';

/**
 * Schedule ids are `<taskQueue>/fetch-records/<sourceId>` for every job (`fetch-records` names the
 * run workflow's family here, and source ids are unique across jobs): a deployment owns the
 * schedules under its task queue's prefix, and sync never touches anyone else's (several
 * deployments, or test runs, can share one namespace).
 */
export function scheduleIdFor(taskQueue: string, sourceId: string): string {
  return `${schedulePrefix(taskQueue)}${sourceId}`;
}

function schedulePrefix(taskQueue: string): string {
  return `${taskQueue}/${FETCH_RECORDS}/`;
}

/** A schedule id (contains `/`), or a source id (then its schedule's id on `taskQueue`). */
export function resolveScheduleId(taskQueue: string, idOrSource: string): string {
  return idOrSource.includes('/') ? idOrSource : scheduleIdFor(taskQueue, idOrSource);
}

export const OVERLAP_POLICIES = [
  'skip',
  'buffer_one',
  'buffer_all',
  'cancel_other',
  'terminate_other',
  'allow_all',
] as const;

const duration = z.string().regex(/^\d+\s*(ms|s|m|h|d)$/, 'a duration such as 30s, 5m, 2h or 1d');

/** A source's `schedule` column. Exactly one of `cron` / `every`. */
export const sourceScheduleSchema = z
  .strictObject({
    /** Cron expression(s), read in the source's timezone, e.g. `0 2 * * *`. */
    cron: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
    /** Fixed interval instead of cron, e.g. `1h`, `30s`. */
    every: duration.optional(),
    /** Random delay added to each start, to spread load. */
    jitter: duration.optional(),
    /** What a start does while the previous scheduled run is still going. Default `skip`. */
    overlap: z.enum(OVERLAP_POLICIES).default('skip'),
    /** How late a missed start (server down) may still run. Default `1d`. */
    catchupWindow: duration.default('1d'),
    /** Pause the schedule when a scheduled run fails. Default false. */
    pauseOnFailure: z.boolean().default(false),
    /** Days added to the nominal date: -1 makes a daily 02:00 run fetch the previous day. Default 0. */
    dateOffsetDays: z.int().min(-366).max(366).default(0),
  })
  .refine((s) => (s.cron === undefined) !== (s.every === undefined), {
    message: 'give exactly one of "cron" or "every"',
  });
export type SourceSchedule = z.infer<typeof sourceScheduleSchema>;

const OVERLAP: Record<SourceSchedule['overlap'], ScheduleOverlapPolicy> = {
  skip: 'SKIP',
  buffer_one: 'BUFFER_ONE',
  buffer_all: 'BUFFER_ALL',
  cancel_other: 'CANCEL_OTHER',
  terminate_other: 'TERMINATE_OTHER',
  allow_all: 'ALLOW_ALL',
};

/** What `sync` wants one schedule to be. */
interface DesiredSchedule {
  scheduleId: string;
  sourceId: string;
  /** Hash of everything below; stored on the schedule (action memo) to tell whether it changed. */
  fingerprint: string;
  options: Omit<ScheduleOptions, 'state' | 'memo'>;
}

function desired(
  source: { id: string; jobType: string; timezone: string; schedule: unknown },
  taskQueue: string,
  maxFutureDays: number,
): DesiredSchedule | { problem: string } {
  const parsed = sourceScheduleSchema.safeParse(source.schedule);
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: source.timezone });
  } catch {
    return { problem: `source '${source.id}': unknown timezone '${source.timezone}'` };
  }
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) =>
      i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message,
    );
    return { problem: `source '${source.id}': schedule ${issues.join('; ')}` };
  }
  const s = parsed.data;
  if (s.dateOffsetDays > maxFutureDays) {
    return {
      problem: `source '${source.id}': schedule dateOffsetDays ${s.dateOffsetDays} would fetch future dates (the future-date policy allows at most ${maxFutureDays})`,
    };
  }
  const input: ScheduledFetchInput = {
    jobType: source.jobType,
    sourceId: source.id,
    timeZone: source.timezone,
    dateOffsetDays: s.dateOffsetDays,
  };
  // The demo job's schedules kept their fingerprint from before jobs were plug-ins (their trigger
  // defaults to it), so that sync leaves them alone.
  const job = source.jobType === FETCH_RECORDS ? {} : { jobType: source.jobType };
  const shape = { s, timeZone: source.timezone, taskQueue, version: 1, ...job };
  const fingerprint = createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 16);
  const scheduleId = scheduleIdFor(taskQueue, source.id);
  return {
    scheduleId,
    sourceId: source.id,
    fingerprint,
    options: {
      scheduleId,
      spec: {
        ...(s.cron !== undefined ? { cronExpressions: Array.isArray(s.cron) ? s.cron : [s.cron] } : {}),
        ...(s.every !== undefined ? { intervals: [{ every: s.every }] } : {}),
        ...(s.jitter !== undefined ? { jitter: s.jitter } : {}),
        timezone: source.timezone,
      },
      action: {
        type: 'startWorkflow',
        workflowType: 'scheduledFetchWorkflow',
        // Temporal appends the nominal time; the run itself gets the business-key id.
        workflowId: `scheduled/${FETCH_RECORDS}/${source.id}`,
        taskQueue,
        args: [input],
        memo: { durableFetchSchedule: fingerprint },
        typedSearchAttributes: [
          { key: SEARCH_KEYS.source, value: source.id },
          { key: SEARCH_KEYS.jobType, value: source.jobType },
        ],
      },
      policies: {
        overlap: OVERLAP[s.overlap],
        catchupWindow: s.catchupWindow,
        pauseOnFailure: s.pauseOnFailure,
      },
    },
  };
}

/** Runs a create/update; Temporal refusing it (e.g. a cron it can't parse) is the user's error. */
async function refused(d: DesiredSchedule, call: () => Promise<unknown>): Promise<void> {
  try {
    await call();
  } catch (err) {
    if (err instanceof ServiceError) {
      const why = err.cause?.message ?? err.message;
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

/**
 * Makes Temporal's Schedules match the sources' `schedule` columns: creates missing ones, updates
 * changed ones (keeping an operator's pause), deletes ours whose source is gone, disabled or has
 * no schedule any more. Idempotent: a second run reports every schedule `unchanged`. With
 * `dryRun`, reports what it would do and changes nothing.
 * @throws UserFacingError INVALID_SCHEDULE naming every source whose schedule is invalid (then
 *   nothing is changed).
 */
export async function syncSchedules(
  ctx: {
    temporal: Client;
    prisma: Pick<PrismaClient, 'source'>;
    taskQueue: string;
    /** The future-date policy (DURABLE_FETCH_MAX_FUTURE_DAYS): the largest `dateOffsetDays`. Default 0. */
    maxFutureDays?: number;
  },
  opts: { dryRun?: boolean } = {},
): Promise<SyncChange[]> {
  const sources = await ctx.prisma.source.findMany({ where: { enabled: true }, orderBy: { id: 'asc' } });
  const wanted: DesiredSchedule[] = [];
  const problems: string[] = [];
  for (const source of sources) {
    if (source.schedule === null) continue;
    const d = desired(source, ctx.taskQueue, ctx.maxFutureDays ?? 0);
    if ('problem' in d) problems.push(d.problem);
    else wanted.push(d);
  }
  if (problems.length > 0) throw new UserFacingError(problems.join('; '), 'INVALID_SCHEDULE');

  const changes: SyncChange[] = [];
  for (const d of wanted) {
    const handle = ctx.temporal.schedule.getHandle(d.scheduleId);
    let current: ScheduleDescription | undefined;
    try {
      current = await handle.describe();
    } catch (err) {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    }
    if (!current) {
      // A source an operator paused (`sources pause`) gets its schedule paused from the start.
      const source = sources.find((x) => x.id === d.sourceId);
      const state = source?.pausedAt
        ? { state: { paused: true, note: `paused with source ${d.sourceId}: ${source.pausedReason ?? ''}` } }
        : {};
      if (!opts.dryRun) await refused(d, () => ctx.temporal.schedule.create({ ...d.options, ...state }));
      changes.push({ scheduleId: d.scheduleId, sourceId: d.sourceId, change: 'created' });
    } else if (fingerprintOf(current) !== d.fingerprint) {
      if (!opts.dryRun) {
        // The operator's pause (and its note) survives a config change.
        await refused(d, () =>
          handle.update((prev) => ({
            ...d.options,
            state: { paused: prev.state.paused, note: prev.state.note },
          })),
        );
      }
      changes.push({ scheduleId: d.scheduleId, sourceId: d.sourceId, change: 'updated' });
    } else {
      changes.push({ scheduleId: d.scheduleId, sourceId: d.sourceId, change: 'unchanged' });
    }
  }
  const keep = new Set(wanted.map((d) => d.scheduleId));
  const prefix = schedulePrefix(ctx.taskQueue);
  for await (const summary of ctx.temporal.schedule.list()) {
    if (!summary.scheduleId.startsWith(prefix) || keep.has(summary.scheduleId)) continue;
    // Listing lags behind: a schedule deleted a moment ago may still be listed. Only one that
    // still exists counts (and, unless dry, is deleted now).
    const handle = ctx.temporal.schedule.getHandle(summary.scheduleId);
    const exists = await (opts.dryRun ? handle.describe() : handle.delete()).then(
      () => true,
      (err: unknown) => {
        if (err instanceof ScheduleNotFoundError) return false;
        throw err;
      },
    );
    if (!exists) continue;
    changes.push({
      scheduleId: summary.scheduleId,
      sourceId: summary.scheduleId.slice(prefix.length),
      change: 'deleted',
    });
  }
  return changes;
}

/** Milliseconds `timeZone` is ahead of UTC at instant `at` (whole seconds). */
function zoneOffsetMs(at: Date, timeZone: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(at)
      .map((p) => [p.type, p.value]),
  ) as Record<string, string>;
  const local = Date.UTC(
    +parts.year!,
    +parts.month! - 1,
    +parts.day!,
    +parts.hour!,
    +parts.minute!,
    +parts.second!,
  );
  return local - Math.floor(at.getTime() / 1000) * 1000;
}

/**
 * The first instant of calendar date `YYYY-MM-DD` in `timeZone`: local midnight, or — where a DST
 * change skips midnight (e.g. America/Santiago) — the moment the day starts. Pure.
 */
export function startOfDayIn(date: string, timeZone: string): Date {
  const midnightUtc = Date.parse(`${date}T00:00:00Z`);
  const first = midnightUtc - zoneOffsetMs(new Date(midnightUtc), timeZone);
  // Once more with the offset in force at that instant (a DST change between the two).
  const second = midnightUtc - zoneOffsetMs(new Date(first), timeZone);
  const candidates = [second, first].filter((t) => dateInTimeZone(new Date(t), timeZone) === date);
  return new Date(candidates.length > 0 ? Math.min(...candidates) : second);
}
