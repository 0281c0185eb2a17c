/**
 * The workflow a Temporal Schedule starts (R6). Temporal gives scheduled workflows ids
 * with a timestamp suffix, so they can't be the business-key workflow themselves. This one is a
 * thin trigger: it derives the business date from the schedule's **nominal** time (the
 * `TemporalScheduledStartTime` search attribute Temporal sets — never a worker's clock), then runs
 * the canonical `fetch/<job>/<source>/<date>` run (`fetchRunWorkflow`) as a child. A run of that key that
 * is already open, or already succeeded, is not started again: the trigger reports it as joined.
 * Deterministic: the date depends only on the start's search attributes and the input.
 */
import {
  ApplicationFailure,
  defineSearchAttributeKey,
  SearchAttributeType,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
} from '@temporalio/common';
import {
  executeChild,
  ParentClosePolicy,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { addDays, dateInTimeZone } from '../contract/business-date.ts';
import { jobTypeOf, workflowIdFor } from '../contract/business-key.ts';
import type { fetchRunWorkflow } from './fetch-records.ts';
import { statusAtStart } from './outcome.ts';
import { childRunPriority, childRunType } from './run-type.ts';
import type { FetchRecordsResult } from '../contract/types.ts';

/** Set by Temporal on every workflow a Schedule starts (also on trigger and backfill). */
const SCHEDULED_START_TIME = defineSearchAttributeKey(
  'TemporalScheduledStartTime',
  SearchAttributeType.DATETIME,
);
const FETCH_SOURCE = defineSearchAttributeKey('FetchSource', SearchAttributeType.KEYWORD);
const FETCH_DATE = defineSearchAttributeKey('FetchDate', SearchAttributeType.KEYWORD);
const JOB_TYPE = defineSearchAttributeKey('JobType', SearchAttributeType.KEYWORD);
const FETCH_STATUS = defineSearchAttributeKey('FetchStatus', SearchAttributeType.KEYWORD);

export interface ScheduledFetchInput {
  /** The source's job; absent from schedules written before jobs were plug-ins (the demo job's). */
  jobType?: string;
  sourceId: string;
  /** IANA timezone the nominal time is read in (the source's). */
  timeZone: string;
  /** Days added to the nominal date: -1 = "a daily 02:00 run fetches the previous day". */
  dateOffsetDays: number;
}

export type ScheduledFetchResult =
  | { outcome: 'ran'; workflowId: string; businessDate: string; result: FetchRecordsResult }
  | { outcome: 'joined'; workflowId: string; businessDate: string };

/** The business date of a scheduled start: nominal time in `timeZone`, plus the offset. Pure. */
export function scheduledBusinessDate(nominal: Date, timeZone: string, dateOffsetDays: number): string {
  return addDays(dateInTimeZone(nominal, timeZone), dateOffsetDays);
}

export async function scheduledFetchWorkflow(input: ScheduledFetchInput): Promise<ScheduledFetchResult> {
  const info = workflowInfo();
  const nominal = info.typedSearchAttributes.get(SCHEDULED_START_TIME);
  if (!nominal) {
    throw ApplicationFailure.nonRetryable(
      'scheduledFetchWorkflow runs only from a Temporal Schedule (no TemporalScheduledStartTime)',
      'InvalidInput',
    );
  }
  let businessDate: string;
  try {
    businessDate = scheduledBusinessDate(nominal, input.timeZone, input.dateOffsetDays);
  } catch {
    // An unknown timezone would fail every workflow task forever: fail the trigger instead.
    throw ApplicationFailure.nonRetryable(`unknown timezone '${input.timeZone}'`, 'InvalidInput');
  }
  const jobType = jobTypeOf(input);
  const workflowId = workflowIdFor({ jobType, sourceId: input.sourceId, businessDate });
  // Operators filter triggers by date too (FetchSource and JobType come with the schedule).
  upsertSearchAttributes([{ key: FETCH_DATE, value: businessDate }]);
  try {
    const result = await executeChild<typeof fetchRunWorkflow>(childRunType(), {
      workflowId,
      args: [
        {
          ...(input.jobType === undefined ? {} : { jobType: input.jobType }),
          sourceId: input.sourceId,
          businessDate,
          correlationId: uuid4(),
          requestedBy: 'schedule',
          scheduledAt: nominal.toISOString(),
        },
      ],
      // Same rule as every other starter: a failed key may run again, a succeeded one never.
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
      // The source as fairness key, as every starter gives it (R8).
      ...childRunPriority(input.sourceId),
      // The run is shared (CLI and app starts of the date join it): an overlap policy that
      // cancels or terminates this trigger must not take the run down with it.
      parentClosePolicy: ParentClosePolicy.ABANDON,
      typedSearchAttributes: [
        { key: FETCH_SOURCE, value: input.sourceId },
        { key: FETCH_DATE, value: businessDate },
        { key: JOB_TYPE, value: jobType },
        // Shown from the start, as every starter does (the run then has no upsert to make).
        { key: FETCH_STATUS, value: statusAtStart() },
      ],
      staticSummary: `${jobType} ${input.sourceId} ${businessDate} (scheduled)`,
    });
    return { outcome: 'ran', workflowId, businessDate, result };
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      return { outcome: 'joined', workflowId, businessDate };
    throw err;
  }
}
