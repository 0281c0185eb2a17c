/**
 * History scenario of a run that shows its status from its start (issue 39): a Schedule's trigger
 * starts its child run with `FetchStatus` `running` (behind its patch), and the run, which shows
 * it already after its claim, upserts only its end (behind its own patch): the upsert Temporal
 * Cloud would bill is gone.
 */
import { FETCH_RECORDS } from '../contract/business-key.ts';
import { type Scenario, triggeredRun } from './history-scenario-steps.ts';

export const statusAtStart: Scenario = {
  name: 'status-at-start',
  run: (s) =>
    triggeredRun(s, 'hist-status-start', FETCH_RECORDS, {
      trigger: 'scheduled-fetch-status-at-start',
      run: 'fetch-run-status-at-start',
    }),
};
