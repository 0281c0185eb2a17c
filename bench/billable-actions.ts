/**
 * Temporal Cloud's billable Actions of a workflow execution, counted from its Event History by the
 * published rules (docs.temporal.io/cloud/actions): one per execution started (by a client,
 * continue-as-new or a parent), per activity attempt, per timer started (the SDK's implicit ones
 * too), per search-attribute upsert command (never the SDK's own `TemporalChangeVersion`, nor the
 * attributes given at start), per signal received, per workflow task whose completion recorded
 * local activities (all of them together), two per child workflow started, one per reset.
 * What a history does not show is not counted: activity heartbeats that reach the server,
 * queries, the Schedule's own actions, workflow-task heartbeats of a long local activity.
 * Pure: used by the bench's `actions` section and its test.
 */

/** The part of a history event this reads (a `temporal.api.history.v1.HistoryEvent`, decoded). */
export interface ActionEvent {
  eventType?: string | number | null;
  activityTaskStartedEventAttributes?: { attempt?: number | null } | null;
  markerRecordedEventAttributes?: { markerName?: string | null } | null;
  upsertWorkflowSearchAttributesEventAttributes?: {
    searchAttributes?: { indexedFields?: Record<string, unknown> | null } | null;
  } | null;
  workflowExecutionStartedEventAttributes?: unknown;
  activityTaskScheduledEventAttributes?: unknown;
  workflowTaskCompletedEventAttributes?: unknown;
  workflowExecutionSignaledEventAttributes?: unknown;
  timerStartedEventAttributes?: unknown;
  startChildWorkflowExecutionInitiatedEventAttributes?: unknown;
  workflowTaskFailedEventAttributes?: { cause?: string | number | null } | null;
}

/** Actions by kind, and their sum. */
export interface ActionCount {
  total: number;
  started: number;
  activityAttempts: number;
  localActivityTasks: number;
  timers: number;
  upserts: number;
  signals: number;
  children: number;
  /** Steps the execution ran: activities scheduled and local activities recorded (each once). */
  steps: number;
}

const CHANGE_VERSION = 'TemporalChangeVersion';

/** The event's type name without its prefix (`ACTIVITY_TASK_STARTED`), from JSON or the client. */
function typeOf(e: ActionEvent): string {
  if (e.workflowExecutionStartedEventAttributes) return 'WORKFLOW_EXECUTION_STARTED';
  if (e.activityTaskScheduledEventAttributes) return 'ACTIVITY_TASK_SCHEDULED';
  if (e.activityTaskStartedEventAttributes) return 'ACTIVITY_TASK_STARTED';
  if (e.markerRecordedEventAttributes) return 'MARKER_RECORDED';
  if (e.upsertWorkflowSearchAttributesEventAttributes) return 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES';
  if (e.workflowTaskCompletedEventAttributes) return 'WORKFLOW_TASK_COMPLETED';
  if (e.workflowExecutionSignaledEventAttributes) return 'WORKFLOW_EXECUTION_SIGNALED';
  if (e.timerStartedEventAttributes) return 'TIMER_STARTED';
  if (e.startChildWorkflowExecutionInitiatedEventAttributes)
    return 'START_CHILD_WORKFLOW_EXECUTION_INITIATED';
  return typeof e.eventType === 'string' ? e.eventType.replace(/^EVENT_TYPE_/, '') : '';
}

/** A count of nothing. */
function noActions(): ActionCount {
  return {
    total: 0,
    started: 0,
    activityAttempts: 0,
    localActivityTasks: 0,
    timers: 0,
    upserts: 0,
    signals: 0,
    children: 0,
    steps: 0,
  };
}

/** Counts the billable Actions of one execution's history (see the module's comment). */
export function billableActions(events: readonly ActionEvent[]): ActionCount {
  const n = noActions();
  // Local activities are recorded as markers in the commands of the workflow task that follows
  // their completion: all of a task's markers come after its WORKFLOW_TASK_COMPLETED event.
  let markersThisTask = false;
  for (const e of events) {
    switch (typeOf(e)) {
      case 'WORKFLOW_EXECUTION_STARTED':
        n.started++;
        break;
      case 'WORKFLOW_TASK_COMPLETED':
        markersThisTask = false;
        break;
      case 'ACTIVITY_TASK_SCHEDULED':
        n.steps++;
        break;
      case 'ACTIVITY_TASK_STARTED':
        // The started event of an activity records its last attempt only: earlier attempts
        // failed without events of their own.
        n.activityAttempts += Math.max(1, e.activityTaskStartedEventAttributes?.attempt ?? 1);
        break;
      case 'MARKER_RECORDED':
        if (e.markerRecordedEventAttributes?.markerName === 'core_local_activity') {
          n.steps++;
          if (!markersThisTask) n.localActivityTasks++;
          markersThisTask = true;
        }
        break;
      case 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES': {
        const fields = Object.keys(
          e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {},
        );
        if (fields.some((f) => f !== CHANGE_VERSION)) n.upserts++;
        break;
      }
      case 'TIMER_STARTED':
        n.timers++;
        break;
      case 'WORKFLOW_EXECUTION_SIGNALED':
        n.signals++;
        break;
      case 'START_CHILD_WORKFLOW_EXECUTION_INITIATED':
        n.children += 2;
        break;
      default:
        break;
    }
  }
  n.total =
    n.started + n.activityAttempts + n.localActivityTasks + n.timers + n.upserts + n.signals + n.children;
  return n;
}

/** Adds the counts of several executions (a run continued as new). */
export function sumActions(counts: readonly ActionCount[]): ActionCount {
  const sum = noActions();
  for (const c of counts) for (const k of Object.keys(sum) as (keyof ActionCount)[]) sum[k] += c[k];
  return sum;
}

/**
 * The naive design's Actions for the same steps: one start, one activity per step (each on its
 * first attempt), nothing else — no status in the Web UI, no deadline timer.
 */
export function naiveActions(steps: number): number {
  return 1 + steps;
}
