/**
 * History scenarios of a run's billed actions (issue 39). A run that shows its status from its start: a Schedule's trigger
 * starts its child run with `FetchStatus` `running` (behind its patch), and the run, which shows
 * it already after its claim, upserts only its end (behind its own patch): the upsert Temporal
 * Cloud would bill is gone.
 */
import { FETCH_RECORDS } from '../contract/business-key.ts';
import { fetchOf, type Scenario, source, triggeredRun } from './history-scenario-steps.ts';

export const statusAtStart: Scenario = {
  name: 'status-at-start',
  run: (s) =>
    triggeredRun(s, 'hist-status-start', FETCH_RECORDS, {
      trigger: 'scheduled-fetch-status-at-start',
      run: 'fetch-run-status-at-start',
    }),
};

/**
 * A run's deadline timer started only when a step could end past the deadline (behind its
 * patch): a run of the default 24 h starts none; one of 5 min whose partner calls last at most
 * 2 min starts it before its first page's store (a local step of up to 10 min).
 */
export const deadlineWhenNear: Scenario = {
  name: 'deadline-when-near',
  async run(s) {
    await source(s, 'hist-deadline-far');
    await source(s, 'hist-deadline-near', { retryPolicy: 'partnerHttpQuick', maxRunTimeMs: 300_000 });
    return [
      await fetchOf(s, 'hist-deadline-far', 'fetch-run-deadline-far'),
      await fetchOf(s, 'hist-deadline-near', 'fetch-run-deadline-near'),
    ];
  },
};
