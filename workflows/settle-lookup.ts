/**
 * Settling an unknown outcome of a non-idempotent call, shared by the run (before calling again)
 * and its compensation (before undoing): look the action up at the partner until the answer is
 * final — found, or nothing found once the last call can no longer take effect there (its settle
 * window, which the activity reports).
 */
import { ApplicationFailure, proxyActivities, sleep } from '@temporalio/workflow';
import type { FetchActivities } from '../activities/index.ts';
import { outlastingOutages } from './database-outage.ts';
import { RETRY_PRESETS } from '../contract/retry-presets.ts';
import type { ReconcileActionInput, ReconcileActionResult } from '../contract/types.ts';

const lookup = proxyActivities<Pick<FetchActivities, 'reconcileDownstream'>>(RETRY_PRESETS.reconcileLookup);

/** Lookups of one action while its settle window lasts, at most (the window is finite: a guard). */
const MAX_SETTLE_WAITS = 50;

/**
 * The final answer of the partner about `actionId`. Waits (a durable timer) while nothing is found
 * but the last call may still take effect.
 * @throws the lookup's failure once its preset is exhausted; OutcomeUnknown when the window
 *   never closes. The caller hands the action to a human then.
 */
export async function lookUpUntilSettled(
  actionId: string,
  onAbsent: ReconcileActionInput['onAbsent'],
): Promise<ReconcileActionResult> {
  for (let waits = 0; ; waits++) {
    // A lookup the partner's breaker holds back waits for it, as the run's own steps do.
    const result = await outlastingOutages('reconcileDownstream', () =>
      lookup.reconcileDownstream({ actionId, onAbsent }),
    );
    if (result.found || result.settleInMs === undefined) return result;
    if (waits >= MAX_SETTLE_WAITS) {
      throw ApplicationFailure.nonRetryable(
        `downstream action ${actionId}: its settle window did not close after ${waits} lookups`,
        'OutcomeUnknown',
      );
    }
    await sleep(result.settleInMs);
  }
}
