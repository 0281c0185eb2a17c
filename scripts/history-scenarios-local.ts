/**
 * History scenarios of runs whose database steps are local activities (workflows/db-steps.ts):
 * a plain run, one that submits a summary, and one paused and resumed at a page boundary.
 */
import { fetchOf, type Scenario, source } from './history-scenario-steps.ts';
import { pausedAndResumed } from './history-scenarios-fetch.ts';

export const localSteps: Scenario = {
  name: 'local-steps',
  async run(s) {
    await source(s, 'hist-local');
    return [await fetchOf(s, 'hist-local', 'fetch-records-local-steps')];
  },
};

export const localSubmit: Scenario = {
  name: 'local-submit',
  async run(s) {
    await source(s, 'hist-local-submit', { submitSummary: true });
    return [await fetchOf(s, 'hist-local-submit', 'fetch-records-local-submit')];
  },
};

export const localPause: Scenario = {
  name: 'local-pause',
  run: (s) => pausedAndResumed(s, 'hist-local-pause', 'fetch-records-local-pause'),
};
