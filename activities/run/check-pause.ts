/**
 * `checkSourcePause`: asked by a run waiting at a page boundary while its source is paused (R11
 * "pause consumption"). Renews the run's lease, so the wait keeps the run owned.
 */
import { engineSql } from '../../db/transaction.ts';
import type { CheckPauseInput } from '../../contract/types.ts';
import type { ActivityDeps } from '../deps.ts';
import { renewLeaseWithSource } from './lease.ts';

/**
 * @returns whether the source is still paused, and the operator's reason.
 * @throws ApplicationFailure LeaseLost when the run is no longer held by this lease.
 */
export function createCheckSourcePause(deps: ActivityDeps) {
  return async function checkSourcePause(
    input: CheckPauseInput,
  ): Promise<{ paused: boolean; reason: string | null }> {
    const source = await renewLeaseWithSource(engineSql(deps.prisma), input, deps.leaseTtlMs, input.sourceId);
    // A deleted source is not paused: the run's next step fails on it.
    return { paused: source?.pausedAt != null, reason: source?.pausedReason ?? null };
  };
}
