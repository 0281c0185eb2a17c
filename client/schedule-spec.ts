/**
 * What a source's Temporal Schedule is: its id, the shape of the source's `schedule` column, and
 * the Schedule built from a source row (`desiredSchedule`). One builder for `schedules sync` and
 * for `sources add`, which checks a new source's schedule with it before writing anything.
 */
import { createHash } from 'node:crypto';
import type { ScheduleOptions, ScheduleOverlapPolicy } from '@temporalio/client';
import { z } from 'zod';
import { FETCH_RECORDS, isJobType, isSourceId } from '../contract/business-key.ts';
import { OVERLAP_POLICIES } from './overlap-policies.ts';
import type { ScheduledFetchInput } from '../workflows/scheduled-fetch.ts';
import { SEARCH_KEYS } from './start-fetch.ts';

/** The workflow every source schedule starts (workflows/scheduled-fetch.ts). */
export const TRIGGER_WORKFLOW_TYPE = 'scheduledFetchWorkflow';

/** What a schedule id is made of: a source and its job (a source row is one). */
export type ScheduleKey = { id: string; jobType: string };

/**
 * Schedule ids are `<taskQueue>/<jobType>/<sourceId>`: a deployment owns the schedules under its
 * task queue's prefix, and sync never touches anyone else's (several deployments, or test runs,
 * can share one namespace). Pure.
 */
export function scheduleIdFor(taskQueue: string, source: ScheduleKey): string {
  return `${taskQueue}/${source.jobType}/${source.id}`;
}

/**
 * The id a source's schedule had before ids named the source's job: `<taskQueue>/fetch-records/<sourceId>`
 * for every job (the same id as {@link scheduleIdFor}'s for a `fetch-records` source).
 * `schedules sync` migrates such a schedule to its new id; until then, lookups find either. Pure.
 */
export function legacyScheduleIdFor(taskQueue: string, sourceId: string): string {
  return `${taskQueue}/${FETCH_RECORDS}/${sourceId}`;
}

/**
 * The source and job a schedule id of this deployment (`taskQueue`) names, or undefined when the
 * id is not of the form `<taskQueue>/<jobType>/<sourceId>` (someone else's schedule). Pure.
 */
export function parseScheduleId(taskQueue: string, scheduleId: string): ScheduleKey | undefined {
  if (!scheduleId.startsWith(`${taskQueue}/`)) return undefined;
  const parts = scheduleId.slice(taskQueue.length + 1).split('/');
  if (parts.length !== 2) return undefined;
  const [jobType, id] = parts as [string, string];
  return isJobType(jobType) && isSourceId(id) ? { id, jobType } : undefined;
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
  const scheduleId = scheduleIdFor(taskQueue, source);
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
        workflowType: TRIGGER_WORKFLOW_TYPE,
        // Temporal appends the nominal time; the run itself gets the business-key id.
        workflowId: `scheduled/${source.jobType}/${source.id}`,
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
