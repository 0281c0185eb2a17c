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
import {
  type LocalActivityOptions,
  patched,
  proxyActivities,
  proxyLocalActivities,
} from '@temporalio/workflow';
import type { FetchActivities } from '../activities/index.ts';
import { RETRY_PRESETS } from '../contract/retry-presets.ts';

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

/**
 * The options of the local steps. Every retry of a local step is a durable timer and a new local
 * activity, never a wait inside the worker (`localRetryThreshold` below any wait): the SDK
 * (sdk-core's local activity manager) keeps each attempt's start-to-close timer running after the
 * attempt ended, so once a step has been retried in the worker for 10 s, an earlier attempt's
 * timer ends whichever later attempt is running as timed out — seen here as a page's store that
 * succeeded being thrown away up to three times after the database came back, and, with the
 * preset's 30 s ceiling, as a 30 s wait (a page's store refused for 10 s, its run settling 35 s
 * after the outage instead of 5 s). A new local activity starts with timers of its own. The waits
 * are at most 2 s, as the steps' own DatabaseUnavailable failures ask (activities/retry/timing.ts),
 * also after an attempt that timed out, whose wait the SDK takes from the policy alone. An outage
 * of the database then also costs no worker slot while it lasts.
 */
export const LOCAL_DB_STEP_OPTIONS = {
  startToCloseTimeout,
  scheduleToCloseTimeout,
  retry: { ...retry, maximumInterval: '2 seconds' },
  // Below any wait the policy gives; set, since an unset threshold is the SDK's 1 minute.
  localRetryThreshold: '1 millisecond',
} satisfies LocalActivityOptions;

const local = proxyLocalActivities<DbSteps>(LOCAL_DB_STEP_OPTIONS);

/** The database steps as this execution runs them. */
export function dbSteps(): DbSteps {
  return patched(LOCAL_DB_STEPS) ? local : regular;
}
