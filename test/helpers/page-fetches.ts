/**
 * A run's `fetchPage` steps (and its other local steps) as a live history (`handle.fetchHistory()`) shows them, whichever way
 * they were dispatched: a source's page fetches are local activities by default (each step one
 * `core_local_activity` marker, written when its workflow task completes, its attempts inside),
 * and activity tasks for an isolated downstream or `localFetch: false` (each step one scheduled
 * event, each attempt's end an event of its own). Tests that judge a run by its fetch steps read
 * them here, so that they hold on either path.
 */
import type { temporal } from '@temporalio/proto';

type Event = temporal.api.history.v1.IHistoryEvent;
type Failure = temporal.api.failure.v1.IFailure;

/** One `fetchPage` step: where it ran, the event that records its end (or start), its failure. */
export interface FetchStep {
  local: boolean;
  /** The index in the history of the marker (local) or of the scheduled event (task). */
  at: number;
  /** The index of the event that ended it in failure, if it failed (the marker itself when local). */
  failedAt: number | null;
  /** The failure's application type (`Timeout`, `CircuitOpen`…), the cause's when wrapped. */
  failureType: string | null;
  failure: Failure | null;
}

/**
 * The local activity a marker records, if it is one: its activity type, attempt, and whether its
 * retry waits on a durable timer the workflow starts (a backoff in the marker).
 */
function localActivityOf(e: Event): { type?: string; attempt?: number; timer: boolean } | null {
  const marker = e.markerRecordedEventAttributes;
  if (marker?.markerName !== 'core_local_activity') return null;
  const data = marker.details?.data?.payloads?.[0]?.data;
  if (!data) return null;
  const step = JSON.parse(Buffer.from(data).toString()) as {
    activity_type?: string;
    attempt?: number;
    backoff?: unknown;
  };
  return { type: step.activity_type, attempt: step.attempt, timer: step.backoff != null };
}

/** One local activity step of a type: the attempt it ended on, its failure's type, a timer after it. */
export interface LocalAttempt {
  attempt: number;
  failureType: string | null;
  timer: boolean;
}

/** The `type` local activity steps of `events` (each ends in one marker), in history order. */
export function localAttempts(events: Event[], type: string): LocalAttempt[] {
  return events.flatMap((e) => {
    const step = localActivityOf(e);
    if (step?.type !== type) return [];
    const failure = e.markerRecordedEventAttributes?.failure;
    const failureType = failure ? (failure.applicationFailureInfo?.type ?? '?') : null;
    return [{ attempt: step.attempt ?? 1, failureType, timer: step.timer }];
  });
}

/** How many `type` activity tasks `events` scheduled. */
export const activityTasks = (events: Event[], type: string): number =>
  events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === type).length;

const typeOf = (f: Failure | null | undefined): string | null =>
  f?.applicationFailureInfo?.type ?? f?.cause?.applicationFailureInfo?.type ?? null;

/** Every `fetchPage` step of `events`, in history order. */
export function fetchSteps(events: Event[]): FetchStep[] {
  const steps: FetchStep[] = [];
  events.forEach((e, at) => {
    if (localActivityOf(e)?.type === 'fetchPage') {
      const failure = e.markerRecordedEventAttributes?.failure ?? null;
      steps.push({ local: true, at, failedAt: failure ? at : null, failureType: typeOf(failure), failure });
      return;
    }
    if (e.activityTaskScheduledEventAttributes?.activityType?.name !== 'fetchPage') return;
    const id = String(e.eventId);
    const failedAt = events.findIndex(
      (f) => String(f.activityTaskFailedEventAttributes?.scheduledEventId) === id,
    );
    const failure =
      failedAt < 0 ? null : (events[failedAt]?.activityTaskFailedEventAttributes?.failure ?? null);
    steps.push({
      local: false,
      at,
      failedAt: failedAt < 0 ? null : failedAt,
      failureType: typeOf(failure),
      failure,
    });
  });
  return steps;
}
