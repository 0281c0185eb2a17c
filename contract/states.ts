/**
 * The state sets of a run (`fetch_run.status`) and of a downstream action (`downstream_action.state`)
 * that more than one layer decides by: which runs are held and fenced, which ledger rows still hold
 * an effect to settle. Written once here; the SQL that filters by them builds its literals from
 * these lists (db/fence.ts, db/ledger/).
 */
import type { DownstreamStateName } from './types.ts';

/**
 * The statuses of a run that an owner holds and works on (R1): `running`, and `retry_wait` (a
 * step failed retryably and waits for its next attempt; the run is still owned, leased and fenced
 * exactly like a running one). `queued` is open but not held by anyone yet.
 */
export const LIVE_RUN_STATUSES = ['running', 'retry_wait'] as const;
export type LiveRunStatus = (typeof LIVE_RUN_STATUSES)[number];

/** Whether `status` (as a row or a query returns it) is one of {@link LIVE_RUN_STATUSES}. */
export function isLiveStatus(status: string): status is LiveRunStatus {
  return (LIVE_RUN_STATUSES as readonly string[]).includes(status);
}

/**
 * Not final: the action may still hold an effect the ledger has not settled, or is being
 * undone, or waits for an operator. A run is `compensated` only when none of its actions is in
 * one of these, and a later claim settles an earlier claim's such action before acting again.
 * (The final states: `compensated`, `not_applied`, `resolved`.)
 */
export const NOT_FINAL_STATES: readonly DownstreamStateName[] = [
  'attempting',
  'unknown',
  'confirmed',
  'compensating',
  'needs_manual',
];

/**
 * The states the compensation workflow works on by itself: {@link NOT_FINAL_STATES} but
 * `needs_manual`, which waits for an operator.
 */
export const COMPENSABLE_STATES: readonly DownstreamStateName[] = [
  'attempting',
  'unknown',
  'confirmed',
  'compensating',
];

/**
 * Awaiting settlement by a workflow or an operator: {@link NOT_FINAL_STATES} but `confirmed`,
 * whose effect is known (reconciling compares it with the partner instead).
 */
export const AWAITING_SETTLEMENT_STATES: readonly DownstreamStateName[] = [
  'attempting',
  'unknown',
  'compensating',
  'needs_manual',
];
