/**
 * History scenarios of how a run ends early (R9): past its maximum run time while a page fetch is
 * held (after a continue-as-new, so the deadline is carried), past it while its confirm is held
 * (then compensated), within it (the deadline armed and disarmed), and a cancel that arrives in
 * the same workflow task as a continue-as-new — recorded on a workflow worker and an activity
 * worker of their own, so the workflow half can be stopped while the activity half stores a page.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities/index.ts';
import { activityLogContext, logContextSinks } from '../activities/log-context.ts';
import { launchFetch, prepareFetch } from '../client/start-fetch.ts';
import { encodeCursor } from '../partner/records.ts';
import { testDeps } from '../test/helpers/deps.ts';
import { PLANTED_SECRET, PLANTED_SECRET_REF } from '../test/helpers/history-fixtures.ts';
import { waitFor } from '../test/helpers/outbox.ts';
import { holdStorePage } from '../test/helpers/store-hold.ts';
import { temporalAddress } from '../test/helpers/temporal.ts';
import { compensationWorkflowIdFor, FETCH_RECORDS } from '../contract/business-key.ts';
import {
  DATE,
  fetchOf,
  type Scenario,
  type ScenarioContext,
  settled,
  source,
  WAIT_MS,
} from './history-scenario-steps.ts';

/** Starts a fetch of `sourceId` on `taskQueue` (default the recorder's), `pagesPerExecution` pages each. */
async function launch(s: ScenarioContext, sourceId: string, pagesPerExecution?: number, taskQueue?: string) {
  const ctx = taskQueue ? { ...s.ctx, taskQueue } : s.ctx;
  const prepared = await prepareFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' });
  const input = { ...prepared.input, ...(pagesPerExecution ? { pagesPerExecution } : {}) };
  return launchFetch(ctx, { ...prepared, input });
}

export const deadlineFetch: Scenario = {
  name: 'deadline-fetch',
  async run(s) {
    const sourceId = 'hist-deadline';
    await source(s, sourceId, { maxRunTimeMs: 4_000 });
    // Page 1, in the second execution, hangs: the deadline passes while it is fetched.
    s.partner.faults.add({ sourceId, cursor: encodeCursor(11), kind: 'delay', delayMs: 60_000 });
    const started = await launch(s, sourceId, 1);
    await settled(started.handle);
    return [{ name: 'fetch-records-deadline', workflowId: started.workflowId, runId: started.runId }];
  },
};

export const deadlineConfirm: Scenario = {
  name: 'deadline-confirm',
  async run(s) {
    const sourceId = 'hist-deadline-confirm';
    await source(s, sourceId, { submitSummary: true, submitMaxProcessingMs: 2_000, maxRunTimeMs: 4_000 });
    const reference = `${FETCH_RECORDS}:${sourceId}:${DATE}:submit-summary:r1`;
    s.partner.faults.add({
      route: 'submissions',
      action: 'confirm',
      reference,
      kind: 'delay',
      delayMs: 60_000,
    });
    const started = await launch(s, sourceId);
    await settled(started.handle);
    const compensationId = compensationWorkflowIdFor(
      { jobType: FETCH_RECORDS, sourceId, businessDate: DATE },
      1,
    );
    await settled(s.client.workflow.getHandle(compensationId));
    return [{ name: 'fetch-records-deadline-confirm', workflowId: started.workflowId, runId: started.runId }];
  },
};

export const withinDeadline: Scenario = {
  name: 'within-deadline',
  async run(s) {
    await source(s, 'hist-within', { maxRunTimeMs: 600_000 });
    return [await fetchOf(s, 'hist-within', 'fetch-records-within-deadline')];
  },
};

/** A workflow-only and an activity-only worker on `taskQueue`; the workflow one can be stopped and started again. */
async function splitWorkers(s: ScenarioContext, taskQueue: string) {
  const connection = await NativeConnection.connect({ address: temporalAddress() });
  const codePath = process.env.DF_TEST_WORKFLOW_BUNDLE;
  if (!codePath) throw new Error('DF_TEST_WORKFLOW_BUNDLE is not set (the recorder sets it)');
  const secret = (ref: string) => (ref === PLANTED_SECRET_REF ? PLANTED_SECRET : undefined);
  const activities = await Worker.create({
    connection,
    taskQueue,
    activities: createActivities(testDeps(s.ctx.prisma, { secret })),
    interceptors: { activity: [activityLogContext] },
  });
  const running = [activities.run()];
  let workflows: Worker | undefined;
  return {
    async startWorkflows() {
      workflows = await Worker.create({
        connection,
        taskQueue,
        workflowBundle: { codePath },
        sinks: logContextSinks,
      });
      running.push(workflows.run());
    },
    async stopWorkflows() {
      workflows?.shutdown();
      await running.pop();
    },
    async stop() {
      workflows?.shutdown();
      activities.shutdown();
      await Promise.all(running);
      await connection.close();
    },
  };
}

export const cancelBeforeContinue: Scenario = {
  name: 'cancel-before-continue',
  async run(s) {
    const sourceId = 'hist-cancan';
    await source(s, sourceId);
    const workers = await splitWorkers(s, `${s.ctx.taskQueue}-split`);
    const hold = await holdStorePage(s.ctx.prisma);
    try {
      await workers.startWorkflows();
      const started = await launch(s, sourceId, 1, `${s.ctx.taskQueue}-split`);
      await hold.waiting(WAIT_MS);
      await workers.stopWorkflows();
      await hold.release();
      await waitFor(
        async () => ((await started.handle.describe()).raw.pendingActivities ?? []).length === 0,
        'page 0 stored with no workflow worker',
        WAIT_MS,
      );
      await started.handle.cancel();
      await workers.startWorkflows();
      await settled(started.handle);
      return [
        {
          name: 'fetch-records-cancel-before-continue',
          workflowId: started.workflowId,
          runId: started.runId,
        },
      ];
    } finally {
      await hold.release();
      await workers.stop();
    }
  },
};
