/**
 * The activities of the fetch-records job, built from injected dependencies (STYLE 3).
 */
import { createClaimRun } from './claim-run.ts';
import { createCompleteRun } from './complete-run.ts';
import type { ActivityDeps } from './deps.ts';
import { createFetchPage } from './fetch-page.ts';
import { createStorePage } from './store-page.ts';

export type { ActivityDeps } from './deps.ts';

/** Builds every activity the worker registers; names are the activity type names in Temporal. */
export function createActivities(deps: ActivityDeps) {
  return {
    claimRun: createClaimRun(deps),
    fetchPage: createFetchPage(deps),
    storePage: createStorePage(deps),
    completeRun: createCompleteRun(deps),
  };
}

export type FetchActivities = ReturnType<typeof createActivities>;
