/**
 * `checkSourcePause`: asked by a run waiting at a page boundary while its source is paused
 * (issue #7, R11 "pause consumption"). Renews the run's lease, so the wait keeps the run owned.
 */
import { sourcePause } from '../db/sources.ts';
import type { CheckPauseInput } from '../workflows/types.ts';
import type { ActivityDeps } from './deps.ts';
import { renewLease } from './lease.ts';

/**
 * @returns whether the source is still paused, and the operator's reason.
 * @throws ApplicationFailure LeaseLost when the run is no longer held by this lease.
 */
export function createCheckSourcePause(deps: ActivityDeps) {
  return async function checkSourcePause(
    input: CheckPauseInput,
  ): Promise<{ paused: boolean; reason: string | null }> {
    await renewLease(deps.prisma, input, deps.leaseTtlMs);
    return sourcePause(deps.prisma, input.sourceId);
  };
}
