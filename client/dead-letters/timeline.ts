/**
 * The attempts of a dead letter's failed workflow run, as Temporal's history tells them: only
 * failure types and redacted messages, never a details payload.
 */
import type { Client } from '@temporalio/client';
import type { ProtoFailure } from '@temporalio/common';
import { redactUrlsIn } from '../../runtime/redact.ts';

/** Longest failure message shown in a timeline entry. */
const MAX_FAILURE_MESSAGE = 500;
/** Continue-as-new hops followed from the claiming execution to the one that failed. */
const MAX_EXECUTIONS_FOLLOWED = 100;
/** How long reading one execution's history from Temporal may take. */
const HISTORY_DEADLINE_MS = 10_000;

/** Failure type and (redacted) message of an activity attempt. Never its details payloads. */
export interface AttemptFailure {
  type: string;
  message: string;
}

/**
 * One activity of the failed execution, as its history records it: Temporal writes only the
 * activity's last attempt (its number, start and end), and the failure of the attempt before it.
 */
export interface TimelineEntry {
  /** Activity type, e.g. `fetchPage`. */
  activity: string;
  activityId: string;
  /** Number of the last attempt (1 = it was not retried). */
  attempt: number;
  scheduledAt: Date;
  startedAt: Date | null;
  endedAt: Date | null;
  outcome: 'completed' | 'failed' | 'timed_out' | 'cancelled' | 'running' | 'scheduled';
  /** Why the last attempt failed or timed out. */
  failure?: AttemptFailure;
  /** Why the attempt before the last one failed (when there was one). */
  previousFailure?: AttemptFailure;
}

type History = Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>;
type HistoryEvent = NonNullable<History['events']>[number];
type Timestamp = HistoryEvent['eventTime'];

/**
 * The activities of the execution that failed: reads the history of `runId` and follows
 * continue-as-new to the last execution of the chain (the run's page loop continues as new every
 * `pagesPerExecution` pages; only the claiming execution's run id is on the FetchRun).
 */
export async function failedExecutionTimeline(
  temporal: Client,
  workflowId: string,
  runId: string,
): Promise<{ timeline: TimelineEntry[]; runId: string; note?: string }> {
  let current = runId;
  for (let hop = 0; ; hop++) {
    const history = await temporal.withDeadline(Date.now() + HISTORY_DEADLINE_MS, () =>
      temporal.workflow.getHandle(workflowId, current).fetchHistory(),
    );
    const events = history.events ?? [];
    const next = continuedAs(events);
    if (!next) return { timeline: timelineOf(events), runId: current };
    if (hop + 1 >= MAX_EXECUTIONS_FOLLOWED) {
      return {
        timeline: timelineOf(events),
        runId: current,
        note: `the run continued as new more than ${MAX_EXECUTIONS_FOLLOWED} times: this is execution ${current}, not the last one`,
      };
    }
    current = next;
  }
}

function continuedAs(events: HistoryEvent[]): string | undefined {
  const last = events[events.length - 1];
  return last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
}

/** Milliseconds of a protobuf timestamp (its seconds may be a Long). */
function dateOf(ts: Timestamp): Date | null {
  if (!ts) return null;
  const seconds = Number(String(ts.seconds ?? 0));
  return new Date(seconds * 1000 + Math.floor((ts.nanos ?? 0) / 1e6));
}

const TIMEOUT_TYPES: Record<number, string> = {
  1: 'StartToClose',
  2: 'ScheduleToStart',
  3: 'ScheduleToClose',
  4: 'Heartbeat',
};

/** Type and redacted message of a failure; never its details, stack or encoded attributes. */
function failureOf(f: ProtoFailure | null | undefined): AttemptFailure | undefined {
  if (!f) return undefined;
  const message = redactUrlsIn(f.message ?? '').slice(0, MAX_FAILURE_MESSAGE);
  if (f.applicationFailureInfo) return { type: f.applicationFailureInfo.type || 'Error', message };
  if (f.timeoutFailureInfo) {
    const kind = TIMEOUT_TYPES[Number(f.timeoutFailureInfo.timeoutType ?? 0)] ?? 'Unknown';
    return { type: `Timeout(${kind})`, message };
  }
  if (f.canceledFailureInfo) return { type: 'Cancelled', message };
  return { type: 'Failure', message };
}

/** The activity entries of one execution's history, in scheduling order. */
function timelineOf(events: HistoryEvent[]): TimelineEntry[] {
  const bySchedule = new Map<string, TimelineEntry>();
  const entryOf = (scheduledEventId: unknown) => bySchedule.get(String(scheduledEventId));
  for (const event of events) {
    const at = dateOf(event.eventTime);
    const local = localStepOf(event, at);
    if (local) {
      bySchedule.set(`local-${String(event.eventId)}`, local);
      continue;
    }
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled && at) {
      bySchedule.set(String(event.eventId), {
        activity: scheduled.activityType?.name ?? 'unknown',
        activityId: scheduled.activityId ?? '',
        attempt: 1,
        scheduledAt: at,
        startedAt: null,
        endedAt: null,
        outcome: 'scheduled',
      });
      continue;
    }
    const started = event.activityTaskStartedEventAttributes;
    if (started) {
      const entry = entryOf(started.scheduledEventId);
      if (!entry) continue;
      entry.startedAt = at;
      entry.attempt = started.attempt ?? entry.attempt;
      entry.outcome = 'running';
      const previous = failureOf(started.lastFailure);
      if (previous) entry.previousFailure = previous;
      continue;
    }
    const completed = event.activityTaskCompletedEventAttributes;
    const failed = event.activityTaskFailedEventAttributes;
    const timedOut = event.activityTaskTimedOutEventAttributes;
    const cancelled = event.activityTaskCanceledEventAttributes;
    const end = completed ?? failed ?? timedOut ?? cancelled;
    if (!end) continue;
    const entry = entryOf(end.scheduledEventId);
    if (!entry) continue;
    entry.endedAt = at;
    if (completed) entry.outcome = 'completed';
    else if (failed) entry.outcome = 'failed';
    else if (timedOut) entry.outcome = 'timed_out';
    else entry.outcome = 'cancelled';
    const failure = failureOf(failed?.failure ?? timedOut?.failure);
    if (failure) entry.failure = failure;
  }
  return [...bySchedule.values()];
}

/**
 * A local activity (the database steps, workflows/db-steps.ts; the page fetches of a source with
 * `localFetch`) as its marker records it: type, attempt and outcome, at the time its workflow task
 * completed (it has no task events of its own).
 */
function localStepOf(event: HistoryEvent, at: Date | null): TimelineEntry | undefined {
  const marker = event.markerRecordedEventAttributes;
  const data =
    marker?.markerName === 'core_local_activity' ? marker.details?.data?.payloads?.[0]?.data : null;
  if (!data || !at) return undefined;
  const step = JSON.parse(Buffer.from(data).toString()) as {
    activity_type?: string;
    activity_id?: string;
    attempt?: number;
  };
  const failure = failureOf(marker?.failure);
  return {
    activity: step.activity_type ?? 'unknown',
    activityId: step.activity_id ?? '',
    attempt: step.attempt ?? 1,
    scheduledAt: at,
    startedAt: at,
    endedAt: at,
    outcome: failure ? 'failed' : 'completed',
    ...(failure ? { failure } : {}),
  };
}
