/**
 * History scenarios that each record one fetch-records run: a plain run, one that submits a
 * summary, one retried through partner errors, one paused and resumed, one continued as new, one
 * cancelled mid-page, runs that ended then were reset (Web UI Reset) to the first workflow task
 * of their last continued-as-new execution, and starts that bypass the client with an input the
 * workflow refuses.
 */
import { pauseSource, resumeSource } from '../client/sources/index.ts';
import { randomUUID } from 'node:crypto';
import { launchFetch, prepareFetch, SEARCH_KEYS, startFetch } from '../client/start-fetch.ts';
import { waitFor } from '../test/helpers/outbox.ts';
import {
  DATE,
  faultsTaken,
  fetchOf,
  runIdOf,
  type Scenario,
  type ScenarioContext,
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
  run: (s) => pausedAndResumed(s, 'hist-pause', 'fetch-records-pause-resume'),
};

/** A run of `sourceId` paused at a page boundary, then resumed by signal: fixture `name`. */
export async function pausedAndResumed(s: ScenarioContext, sourceId: string, name: string) {
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
  const status = async () => (await started.handle.describe()).typedSearchAttributes.get(SEARCH_KEYS.status);
  await waitFor(async () => (await status()) === 'paused', 'FetchStatus paused', WAIT_MS);
  const resumed = await resumeSource(s.ctx, sourceId, { actor: 'record-histories' });
  if (resumed.signalled !== 1) throw new Error(`resume signalled ${resumed.signalled} runs, not 1`);
  await settled(started.handle);
  return [{ name, workflowId: started.workflowId, runId: started.runId }];
}

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

/** Starts a run of `sourceId` with one page per execution and waits until it closes. */
async function pagePerExecution(s: ScenarioContext, sourceId: string) {
  const prepared = await prepareFetch(s.ctx, { sourceId, date: DATE, requestedBy: 'test' });
  const started = await launchFetch(s.ctx, {
    ...prepared,
    input: { ...prepared.input, pagesPerExecution: 1 },
  });
  await settled(started.handle);
  return started.workflowId;
}

/**
 * What the Web UI's Reset does (ResetWorkflowExecution) to the first workflow task of the latest
 * execution; waits for the execution it starts to close and returns its run id.
 */
async function resetLatestToFirstTask(s: ScenarioContext, workflowId: string): Promise<string> {
  const runId = await runIdOf(s.client, workflowId);
  const history = await s.client.workflow.getHandle(workflowId, runId).fetchHistory();
  const firstTask = (history.events ?? []).find((e) => e.workflowTaskCompletedEventAttributes);
  if (!firstTask?.eventId) throw new Error(`${workflowId}: no completed workflow task`);
  const { runId: resetRunId } = await s.client.workflowService.resetWorkflowExecution({
    namespace: s.client.options.namespace,
    workflowExecution: { workflowId, runId },
    reason: 'recording histories',
    workflowTaskFinishEventId: firstTask.eventId,
    requestId: randomUUID(),
  });
  if (!resetRunId) throw new Error(`${workflowId}: the reset started no execution`);
  await settled(s.client.workflow.getHandle(workflowId, resetRunId));
  return resetRunId;
}

export const resetEnded: Scenario = {
  name: 'reset-ended',
  async run(s) {
    // Dead-lettered on its second page (one 422), then reset after the cause is gone: the reset
    // execution finds the run ended under its claim, claims it anew and finishes it.
    await source(s, 'hist-reset-failed');
    s.partner.faults.add({ sourceId: 'hist-reset-failed', kind: 'status', status: 422, afterRequests: 1 });
    const failed = await pagePerExecution(s, 'hist-reset-failed');
    // Succeeded, then reset: the reset execution claims anew and reports the stored success.
    await source(s, 'hist-reset-done');
    const done = await pagePerExecution(s, 'hist-reset-done');
    return [
      {
        name: 'fetch-records-reset-dead-lettered',
        workflowId: failed,
        runId: await resetLatestToFirstTask(s, failed),
      },
      {
        name: 'fetch-records-reset-succeeded',
        workflowId: done,
        runId: await resetLatestToFirstTask(s, done),
      },
    ];
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
