/**
 * History scenarios that each record one fetch-records run: a plain run, one that submits a
 * summary, one retried through partner errors, one paused and resumed, one continued as new, one
 * cancelled mid-page, and starts that bypass the client with an input the workflow refuses.
 */
import { pauseSource, resumeSource } from '../client/sources.ts';
import { launchFetch, prepareFetch, SEARCH_KEYS, startFetch } from '../client/start-fetch.ts';
import { waitFor } from '../test/helpers/outbox.ts';
import {
  DATE,
  faultsTaken,
  fetchOf,
  type Scenario,
  settled,
  source,
  WAIT_MS,
} from './history-scenario-steps.ts';

export const happy: Scenario = {
  name: 'happy',
  async run(s) {
    await source(s, 'hist-happy');
    return [await fetchOf(s, 'hist-happy', 'fetch-records-happy')];
  },
};

export const submit: Scenario = {
  name: 'submit',
  async run(s) {
    await source(s, 'hist-submit', { submitSummary: true });
    return [await fetchOf(s, 'hist-submit', 'fetch-records-submit')];
  },
};

export const retries: Scenario = {
  name: 'retries',
  async run(s) {
    await source(s, 'hist-retries');
    // The first request answers 503, the first of page 1 a 429 with Retry-After: two retries.
    s.partner.faults.add({ sourceId: 'hist-retries', kind: 'status', status: 503 });
    s.partner.faults.add({
      sourceId: 'hist-retries',
      kind: 'status',
      status: 429,
      retryAfter: '1',
      afterRequests: 2,
    });
    return [await fetchOf(s, 'hist-retries', 'fetch-records-retries')];
  },
};

export const pauseResume: Scenario = {
  name: 'pause-resume',
  async run(s) {
    const sourceId = 'hist-pause';
    await source(s, sourceId);
    // Hold page 1 while the pause lands: the run stores it, then waits at the page boundary.
    s.partner.faults.add({ sourceId, kind: 'delay', delayMs: 2_000, afterRequests: 1 });
    const started = await startFetch(s.ctx, { sourceId, date: DATE, requestedBy: 'test' });
    await waitFor(
      faultsTaken(s, (f) => f.sourceId === sourceId),
      'the partner holds page 1',
      WAIT_MS,
    );
    await pauseSource(s.ctx, sourceId, { reason: 'recording histories', actor: 'record-histories' });
    const status = async () =>
      (await started.handle.describe()).typedSearchAttributes.get(SEARCH_KEYS.status);
    await waitFor(async () => (await status()) === 'paused', 'FetchStatus paused', WAIT_MS);
    const resumed = await resumeSource(s.ctx, sourceId, { actor: 'record-histories' });
    if (resumed.signalled !== 1) throw new Error(`resume signalled ${resumed.signalled} runs, not 1`);
    await settled(started.handle);
    return [{ name: 'fetch-records-pause-resume', workflowId: started.workflowId, runId: started.runId }];
  },
};

export const continueAsNew: Scenario = {
  name: 'continue-as-new',
  async run(s) {
    await source(s, 'hist-continue');
    // 5 pages at 2 per execution: three executions, the later two started from resume state.
    const prepared = await prepareFetch(s.ctx, {
      sourceId: 'hist-continue',
      date: DATE,
      requestedBy: 'test',
    });
    const started = await launchFetch(s.ctx, {
      ...prepared,
      input: { ...prepared.input, pagesPerExecution: 2 },
    });
    await settled(started.handle);
    return [{ name: 'fetch-records-continue-as-new', workflowId: started.workflowId, runId: started.runId }];
  },
};

export const cancelled: Scenario = {
  name: 'cancelled',
  async run(s) {
    const sourceId = 'hist-cancel';
    await source(s, sourceId);
    s.partner.faults.add({ sourceId, kind: 'delay', delayMs: 60_000, afterRequests: 1 });
    const started = await startFetch(s.ctx, { sourceId, date: DATE, requestedBy: 'test' });
    await waitFor(
      faultsTaken(s, (f) => f.sourceId === sourceId),
      'the partner holds page 1',
      WAIT_MS,
    );
    await started.handle.cancel();
    await settled(started.handle);
    return [{ name: 'fetch-records-cancelled', workflowId: started.workflowId, runId: started.runId }];
  },
};

export const invalidInput: Scenario = {
  name: 'invalid-input',
  async run(s) {
    const sourceId = 'hist-invalid';
    await source(s, sourceId);
    // As the Web UI's "Start Workflow" sends it: no client check. The key's run takes a dead letter.
    const workflowId = `fetch/fetch-records/${sourceId}/${DATE}`;
    const input = {
      sourceId,
      businessDate: DATE,
      correlationId: 'hist-1',
      requestedBy: 'test',
      pageSize: 1e9,
    };
    const keyed = await s.client.workflow.start('fetchRecordsWorkflow', {
      workflowId,
      taskQueue: s.ctx.taskQueue,
      args: [input] as never,
    });
    // Under a workflow id that names no business key: a failed workflow only.
    const loose = await s.client.workflow.start('fetchRecordsWorkflow', {
      workflowId: `hist-invalid-${DATE}`,
      taskQueue: s.ctx.taskQueue,
      args: [{ ...input, pageSize: 10 }] as never,
    });
    await Promise.all([settled(keyed), settled(loose)]);
    return [
      { name: 'fetch-records-invalid-input', workflowId, runId: keyed.firstExecutionRunId },
      {
        name: 'fetch-records-invalid-input-no-key',
        workflowId: loose.workflowId,
        runId: loose.firstExecutionRunId,
      },
    ];
  },
};
