/**
 * The run workflow's types (workflows/fetch-records.ts registers one function under both): the
 * name every starter uses, the name runs carried before it, and which of the two a workflow starts
 * its child runs as, with which priority. Workflow code only where {@link childRunType} and
 * {@link childRunPriority} are called.
 */
import { patched } from '@temporalio/workflow';

/** The workflow type every new run is started as, whatever its job. */
export const RUN_WORKFLOW_TYPE = 'fetchRunWorkflow';

/**
 * The run workflow's type before it was named for any job. Runs started before the rename still
 * carry it; the worker runs both. No listing filters on the run's type (runs are found by their
 * search attributes and ids), so none needs both.
 */
export const LEGACY_RUN_WORKFLOW_TYPE = 'fetchRecordsWorkflow';

/** Patch id: histories recorded before it started their child runs as `fetchRecordsWorkflow`. */
const RUN_TYPE_PATCH = 'generic-run-workflow-type';

/**
 * The type a workflow starts a child run as: {@link RUN_WORKFLOW_TYPE}; the legacy type when
 * replaying a child start that code before the rename recorded (a start command of another type
 * would not replay). Call it right before each child start.
 */
export function childRunType(): typeof RUN_WORKFLOW_TYPE | typeof LEGACY_RUN_WORKFLOW_TYPE {
  return patched(RUN_TYPE_PATCH) ? RUN_WORKFLOW_TYPE : LEGACY_RUN_WORKFLOW_TYPE;
}

/** Patch id: histories recorded before it started their child runs with no fairness key. */
const CHILD_FAIRNESS_PATCH = 'child-run-fairness-key';

/**
 * The priority of a child run of `sourceId`: the source as its fairness key, as every other
 * starter gives it (client/start-fetch.ts), so that the runs Schedules and dead-letter replays
 * start take turns with other sources' on the task queue, their workflow tasks and the local page
 * fetches inside them (R8). Without it a child takes its parent's priority: unkeyed, so one
 * source's backlog of scheduled runs is dispatched ahead of every other source's in arrival
 * order. Nothing for a child start that code before the key recorded. Call it right before each
 * child start.
 */
export function childRunPriority(sourceId: string): { priority?: { fairnessKey: string } } {
  return patched(CHILD_FAIRNESS_PATCH) ? { priority: { fairnessKey: sourceId } } : {};
}
