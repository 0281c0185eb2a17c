/**
 * The activities of the fetch-records job, built from injected dependencies (STYLE 3).
 */
import { createCheckSourcePause } from './check-pause.ts';
import { createClaimRun } from './claim-run.ts';
import { createCompleteRun } from './complete-run.ts';
import type { ActivityDeps } from './deps.ts';
import { classify } from './errors.ts';
import { withRetryTiming } from './retry-timing.ts';
import { createFetchPage } from './fetch-page.ts';
import { createDownstreamActivities } from './downstream.ts';
import { createFinishRun } from './finish-run.ts';
import { createReplayActivities } from './replay.ts';
import { createStorePage } from './store-page.ts';

export type { ActivityDeps } from './deps.ts';

/**
 * Every activity throws a typed ApplicationFailure for what it can classify (e.g. a dropped
 * database connection becomes DatabaseUnavailable), never an error named after its JS class, and
 * a retryable one carries its jittered (or Retry-After) delay, or becomes DeadlineExceeded.
 */
function classified<A extends unknown[], R>(
  name: string,
  fn: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      return await fn(...args);
    } catch (err) {
      throw withRetryTiming(classify(err, name));
    }
  };
}

/** Builds every activity the worker registers; names are the activity type names in Temporal. */
export function createActivities(deps: ActivityDeps) {
  const downstream = { ...createDownstreamActivities(deps), ...createReplayActivities(deps) };
  const wrapped = Object.fromEntries(
    Object.entries(downstream).map(([name, fn]) => [
      name,
      classified(name, fn as (...a: unknown[]) => Promise<unknown>),
    ]),
  ) as typeof downstream;
  return {
    ...wrapped,
    claimRun: classified('claimRun', createClaimRun(deps)),
    fetchPage: classified('fetchPage', createFetchPage(deps)),
    storePage: classified('storePage', createStorePage(deps)),
    completeRun: classified('completeRun', createCompleteRun(deps)),
    finishRun: classified('finishRun', createFinishRun(deps)),
    checkSourcePause: classified('checkSourcePause', createCheckSourcePause(deps)),
  };
}

export type FetchActivities = ReturnType<typeof createActivities>;
