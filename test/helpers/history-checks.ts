/**
 * What a recorded history shows, as checks over its events (test/helpers/history-fixtures.ts
 * says which each fixture must pass): activities scheduled and retried, how the execution
 * closed, children, signals, continue-as-new, and where page fetches were dispatched.
 */
import type { HistoryEvent } from './history-files.ts';

export const is = (type: string) => (e: HistoryEvent) => e.eventType === `EVENT_TYPE_${type}`;
const attrs = (e: HistoryEvent, key: string) => (e[key] ?? {}) as Record<string, unknown>;
const nameOf = (value: unknown) => (value as { name?: string } | undefined)?.name;

/** Activity types the history scheduled, once each in order of first appearance. */
export function activityTypes(events: HistoryEvent[]): string[] {
  const types = events
    .filter(is('ACTIVITY_TASK_SCHEDULED'))
    .map((e) => nameOf(attrs(e, 'activityTaskScheduledEventAttributes').activityType) ?? '?');
  return [...new Set(types)];
}

export const closedAs = (status: string) => (events: HistoryEvent[]) =>
  events.some(is(`WORKFLOW_EXECUTION_${status}`));
export const completed = closedAs('COMPLETED');
export const childStarted = (type: string) => (events: HistoryEvent[]) =>
  events
    .filter(is('START_CHILD_WORKFLOW_EXECUTION_INITIATED'))
    .some(
      (e) => nameOf(attrs(e, 'startChildWorkflowExecutionInitiatedEventAttributes').workflowType) === type,
    );
export const runsActivity = (type: string) => (events: HistoryEvent[]) =>
  activityTypes(events).includes(type);
export const retriedActivity = (events: HistoryEvent[]) =>
  events
    .filter(is('ACTIVITY_TASK_STARTED'))
    .some((e) => Number(attrs(e, 'activityTaskStartedEventAttributes').attempt ?? 1) > 1);
/** The child runs the history started were keyed by `key` (their fairness key), at least one. */
export const childKeyed = (key: string) => (events: HistoryEvent[]) => {
  const starts = events
    .filter(is('START_CHILD_WORKFLOW_EXECUTION_INITIATED'))
    .map((e) => attrs(e, 'startChildWorkflowExecutionInitiatedEventAttributes'));
  return starts.length > 0 && starts.every((a) => fairnessKeyOf(a) === key);
};
/** The execution was started with `key` as its fairness key. */
export const startedKeyed = (key: string) => (events: HistoryEvent[]) =>
  fairnessKeyOf(started(events)) === key;
const fairnessKeyOf = (a: Record<string, unknown>) =>
  (a.priority as { fairnessKey?: string } | undefined)?.fairnessKey;
export const signalled = (name: string) => (events: HistoryEvent[]) =>
  events.filter(is('WORKFLOW_EXECUTION_SIGNALED')).some((e) => {
    return attrs(e, 'workflowExecutionSignaledEventAttributes').signalName === name;
  });
const started = (events: HistoryEvent[]) =>
  attrs(
    events.find(is('WORKFLOW_EXECUTION_STARTED')) ?? { eventType: '' },
    'workflowExecutionStartedEventAttributes',
  );
/** Started by continue-as-new (carries the previous execution's run id). */
export const continued = (events: HistoryEvent[]) => started(events).continuedExecutionRunId !== undefined;
export const hasParent = (events: HistoryEvent[]) => started(events).parentWorkflowExecution !== undefined;
export const pagesFetched = (n: number) => (events: HistoryEvent[]) =>
  events
    .filter(is('ACTIVITY_TASK_SCHEDULED'))
    .filter((e) => nameOf(attrs(e, 'activityTaskScheduledEventAttributes').activityType) === 'fetchPage')
    .length >= n;
/** Every fetchPage the history scheduled went to a queue `<…>-ds-<downstream>` keyed `key`, weight `weight`. */
export const fetchesOn = (downstream: string, key: string, weight: number) => (events: HistoryEvent[]) => {
  const fetches = events
    .filter(is('ACTIVITY_TASK_SCHEDULED'))
    .map((e) => attrs(e, 'activityTaskScheduledEventAttributes'))
    .filter((a) => nameOf(a.activityType) === 'fetchPage');
  return (
    fetches.length > 0 &&
    fetches.every((a) => {
      const priority = (a.priority ?? {}) as { fairnessKey?: string; fairnessWeight?: number };
      return (
        (nameOf(a.taskQueue) ?? '').endsWith(`-ds-${downstream}`) &&
        priority.fairnessKey === key &&
        priority.fairnessWeight === weight
      );
    })
  );
};
export const all =
  (...checks: ((events: HistoryEvent[]) => boolean)[]) =>
  (events: HistoryEvent[]) =>
    checks.every((check) => check(events));
export const has = (type: string) => (events: HistoryEvent[]) => events.some(is(type));
export const not = (check: (events: HistoryEvent[]) => boolean) => (events: HistoryEvent[]) => !check(events);
/** The history recorded patch `id` (a `core_patch` marker; its data is `{"id": …}` as JSON). */
export const patchedWith = (id: string) => (events: HistoryEvent[]) =>
  events
    .filter(is('MARKER_RECORDED'))
    .map((e) => attrs(e, 'markerRecordedEventAttributes'))
    .filter((a) => a.markerName === 'core_patch')
    .flatMap(
      (a) =>
        (a.details as { 'patch-data'?: { payloads?: { data?: string }[] } })['patch-data']?.payloads ?? [],
    )
    .some(
      (p) =>
        (JSON.parse(Buffer.from(p.data ?? '', 'base64').toString() || '{}') as { id?: string }).id === id,
    );
/** At least `n` local activities ran (each a `core_local_activity` marker). */
export const localActivities = (n: number) => (events: HistoryEvent[]) =>
  events
    .filter(is('MARKER_RECORDED'))
    .filter((e) => attrs(e, 'markerRecordedEventAttributes').markerName === 'core_local_activity').length >=
  n;
/**
 * Each activity of `type` the history ran as a local activity (its `core_local_activity` marker):
 * its attempt, and whether its retry waits on a durable timer (a backoff in the marker).
 */
function localAttempts(events: HistoryEvent[], type: string): { attempt: number; timer: boolean }[] {
  return events
    .filter(is('MARKER_RECORDED'))
    .map((e) => attrs(e, 'markerRecordedEventAttributes'))
    .filter((a) => a.markerName === 'core_local_activity')
    .map((a) => (a.details as { data?: { payloads?: { data?: string }[] } }).data?.payloads?.[0]?.data)
    .map(
      (data) => JSON.parse(Buffer.from(data ?? '', 'base64').toString() || '{}') as Record<string, unknown>,
    )
    .filter((step) => step.activity_type === type)
    .map((step) => ({ attempt: Number(step.attempt ?? 1), timer: step.backoff != null }));
}
/**
 * The downstream confirm ran as a local activity, never as an activity task; with `retried`, on a
 * later attempt (a retry inside the worker).
 */
export const confirmedLocally =
  (retried = false) =>
  (events: HistoryEvent[]) => {
    const attempts = localAttempts(events, 'confirmSubmission');
    return (
      attempts.length > 0 &&
      (!retried || attempts.some((a) => a.attempt > 1)) &&
      !runsActivity('confirmSubmission')(events)
    );
  };
/**
 * At least `n` page fetches ran as local activities; with `retried`, one of them on a later
 * attempt; with `afterTimer`, one failed attempt's retry waited on a durable timer the history
 * started.
 */
export const fetchedLocally =
  (n: number, retried = false, afterTimer = false) =>
  (events: HistoryEvent[]) => {
    const attempts = localAttempts(events, 'fetchPage');
    return (
      attempts.length >= n &&
      (!retried || attempts.some((a) => a.attempt > 1)) &&
      (!afterTimer || (attempts.some((a) => a.timer) && events.some(is('TIMER_STARTED'))))
    );
  };
