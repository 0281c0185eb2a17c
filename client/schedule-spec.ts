/**
 * What a source's Temporal Schedule is: its id, the shape of the source's `schedule` column, and
 * the Schedule built from a source row (`desiredSchedule`). One builder for `schedules sync` and
 * for `sources add`, which checks a new source's schedule with it before writing anything.
 */
import { createHash } from 'node:crypto';
import type { ScheduleOptions, ScheduleOverlapPolicy } from '@temporalio/client';
import { z } from 'zod';
import { FETCH_RECORDS } from '../contract/business-key.ts';
import { OVERLAP_POLICIES } from './overlap-policies.ts';
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

export function schedulePrefix(taskQueue: string): string {
  return `${taskQueue}/${FETCH_RECORDS}/`;
}

/** A schedule id (contains `/`), or a source id (then its schedule's id on `taskQueue`). */
export function resolveScheduleId(taskQueue: string, idOrSource: string): string {
  return idOrSource.includes('/') ? idOrSource : scheduleIdFor(taskQueue, idOrSource);
}

export { OVERLAP_POLICIES };

const duration = z.string().regex(/^\d+\s*(ms|s|m|h|d)$/, 'a duration such as 30s, 5m, 2h or 1d');

/** A source's `schedule` column. Exactly one of `cron` / `every`. */
export const sourceScheduleSchema = z
  .strictObject({
    cron: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .optional()
      .describe("Cron expression(s), read in the source's timezone, e.g. `0 2 * * *`."),
    every: duration.optional().describe('Fixed interval instead of cron, e.g. `1h`, `30s`.'),
    jitter: duration.optional().describe('Random delay added to each start, to spread load.'),
    overlap: z
      .enum(OVERLAP_POLICIES)
      .default('skip')
      .describe('What a start does while the previous scheduled run is still going.'),
    catchupWindow: duration.default('1d').describe('How late a missed start (server down) may still run.'),
    pauseOnFailure: z.boolean().default(false).describe('Pause the schedule when a scheduled run fails.'),
    dateOffsetDays: z
      .int()
      .min(-366)
      .max(366)
      .default(0)
      .describe('Days added to the nominal date: -1 makes a daily 02:00 run fetch the previous day.'),
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
export interface DesiredSchedule {
  scheduleId: string;
  sourceId: string;
  /** Hash of everything below; stored on the schedule (action memo) to tell whether it changed. */
  fingerprint: string;
  options: Omit<ScheduleOptions, 'state' | 'memo'>;
}

/** The fields of a source row its schedule depends on. */
export type ScheduledSource = { id: string; jobType: string; timezone: string; schedule: unknown };

/**
 * The Schedule `source` should have, or the one-line problem that prevents it: an unknown
 * timezone, a schedule not of {@link sourceScheduleSchema}'s shape, or a `dateOffsetDays` beyond
 * the future-date policy (`maxFutureDays`). Pure.
 */
export function desiredSchedule(
  source: ScheduledSource,
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
