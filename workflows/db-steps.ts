/**
 * The short steps against our own PostgreSQL — claim, store a page, complete, check a pause,
 * record a downstream intent — as local activities: each runs in the worker that holds the
 * workflow task, with no activity task to schedule, poll, start and complete on the server, and
 * several of them share one workflow task. Their fencing is in the activities (the lease token,
 * the idempotency key, the row lock), not in how they are dispatched, so a local attempt that is
 * run again after a worker died is refused or joined exactly as a regular one is. The partner and
 * downstream calls stay regular activities: they heartbeat, may be slow, and run on their
 * downstream's own task queue.
 */
import { patched, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { FetchActivities } from '../activities/index.ts';
import { RETRY_PRESETS } from './retry-presets.ts';

type DbSteps = Pick<
  FetchActivities,
  | 'claimRun'
  | 'storePage'
  | 'completeRun'
  | 'checkSourcePause'
  | 'recordDownstreamIntent'
  | 'adoptDownstreamAction'
  | 'markNeedsManual'
>;

/**
 * Patch id: histories recorded before it ran these steps as regular activities, and must replay
 * so. Asked at every step, so an execution recorded before it keeps its regular steps.
 */
export const LOCAL_DB_STEPS = 'local-database-steps';

const regular = proxyActivities<DbSteps>(RETRY_PRESETS.database);

const { startToCloseTimeout, scheduleToCloseTimeout, retry } = RETRY_PRESETS.database;

const local = proxyLocalActivities<DbSteps>({
  startToCloseTimeout,
  scheduleToCloseTimeout,
  retry,
  // Retries waiting longer than this are a durable timer, not a sleep inside the workflow task:
  // an outage of the database then costs no worker slot while it lasts.
  localRetryThreshold: '10 seconds',
});

/** The database steps as this execution runs them. */
export function dbSteps(): DbSteps {
  return patched(LOCAL_DB_STEPS) ? local : regular;
}
