/**
 * History scenarios of runs whose database steps are local activities (workflows/db-steps.ts):
 * a plain run, one that submits a summary, and one paused and resumed at a page boundary; and a
 * run of a source whose page fetches are local too (workflows/partner-dispatch.ts).
 */
import { launchFetch, prepareFetch } from '../client/start-fetch.ts';
import { DATE, fetchOf, type Scenario, settled, source } from './history-scenario-steps.ts';
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

export const localFetch: Scenario = {
  name: 'local-fetch',
  async run(s) {
    const sourceId = 'hist-local-fetch';
    await source(s, sourceId, { localFetch: true });
    // The first call answers 503: the local fetch's own retry asks again.
    s.partner.faults.add({ sourceId, kind: 'status', status: 503 });
    // Two pages, one per execution: the second fetches locally because its resume state says so.
    const prepared = await prepareFetch(s.ctx, { sourceId, date: DATE, requestedBy: 'test' });
    const started = await launchFetch(s.ctx, {
      ...prepared,
      input: { ...prepared.input, pagesPerExecution: 1 },
    });
    await settled(started.handle);
    return [{ name: 'fetch-records-local-fetch', workflowId: started.workflowId, runId: started.runId }];
  },
};

export const localFetchTimer: Scenario = {
  name: 'local-fetch-timer',
  async run(s) {
    const sourceId = 'hist-local-fetch-timer';
    await source(s, sourceId, { localFetch: true });
    // Past the local retry threshold (10 s): the retry waits on a durable timer, not in the task.
    s.partner.faults.add({ sourceId, kind: 'status', status: 429, retryAfter: '12' });
    return [await fetchOf(s, sourceId, 'fetch-records-local-fetch-timer')];
  },
};
