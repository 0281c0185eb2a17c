/**
 * History scenarios of the run workflow under its generic type (`fetchRunWorkflow`, issue 37): a
 * run that fails for good (its `FetchStatus` in the run's words, `dead_lettered`, behind its
 * patch), and a schedule's trigger that starts its child run under the new type (behind its
 * patch) with that run.
 */
import { FETCH_RECORDS } from '../contract/business-key.ts';
import { fetchOf, type Scenario, source, triggeredRun } from './history-scenario-steps.ts';

export const genericNames: Scenario = {
  name: 'generic-names',
  async run(s) {
    const failing = 'hist-run-dead';
    await source(s, failing);
    // Not found: non-retryable, so the run ends dead-lettered at its first page.
    s.partner.faults.add({ sourceId: failing, kind: 'status', status: 404 });
    const dead = await fetchOf(s, failing, 'fetch-run-dead-lettered');

    const [trigger, child] = await triggeredRun(s, 'hist-run-sched', FETCH_RECORDS, {
      trigger: 'scheduled-fetch-run',
      run: 'scheduled-fetch-run-child',
    });
    return [dead, trigger!, child!];
  },
};
