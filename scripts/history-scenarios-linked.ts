/**
 * History scenarios that record a run together with the workflows it leads to: a compensation
 * (after a failed or a cancelled confirm), a dead-letter replay and the run it restarts, a
 * schedule's start with the fetch it runs as a child, and both starting their child runs keyed by
 * the source (behind its patch).
 */
import { startReplay } from '../client/dead-letters/replay.ts';
import { startFetch } from '../client/start-fetch.ts';
import { waitFor } from '../test/helpers/outbox.ts';
import { compensationWorkflowIdFor, FETCH_RECORDS } from '../contract/business-key.ts';
import { replayWorkflowId } from '../workflows/replay-api.ts';
import {
  DATE,
  type Execution,
  faultsTaken,
  fetchOf,
  runIdOf,
  type Scenario,
  type ScenarioContext,
  settled,
  source,
  triggeredRun,
  WAIT_MS,
} from './history-scenario-steps.ts';

/** A run whose confirm fails (or hangs and is cancelled): the run's and its compensation's executions. */
async function compensated(s: ScenarioContext, how: 'failed' | 'cancelled'): Promise<Execution[]> {
  const sourceId = `hist-comp-${how}`;
  await source(s, sourceId, { submitSummary: true, submitMaxProcessingMs: 2_000 });
  const reference = `${FETCH_RECORDS}:${sourceId}:${DATE}:submit-summary:r1`;
  const fault =
    how === 'failed'
      ? { kind: 'status' as const, status: 422, times: 5 }
      : { kind: 'delay' as const, delayMs: 60_000 };
  s.partner.faults.add({ route: 'submissions', action: 'confirm', reference, ...fault });
  const started = await startFetch(s.ctx, { sourceId, date: DATE, requestedBy: 'test' });
  if (how === 'cancelled') {
    await waitFor(
      faultsTaken(s, (f) => f.reference === reference),
      'the partner holds the confirm',
      WAIT_MS,
    );
    await started.handle.cancel();
  }
  await settled(started.handle);
  const compensationId = compensationWorkflowIdFor(
    { jobType: FETCH_RECORDS, sourceId, businessDate: DATE },
    1,
  );
  await settled(s.client.workflow.getHandle(compensationId));
  return [
    { name: `compensation-${how}-fetch-records`, workflowId: started.workflowId, runId: started.runId },
    {
      name: `compensation-${how}-compensate-run`,
      workflowId: compensationId,
      runId: await runIdOf(s.client, compensationId),
    },
  ];
}

export const compensationFailed: Scenario = {
  name: 'compensation-failed',
  run: (s) => compensated(s, 'failed'),
};

export const compensationCancelled: Scenario = {
  name: 'compensation-cancelled',
  run: (s) => compensated(s, 'cancelled'),
};

export const deadLetterReplay: Scenario = {
  name: 'dead-letter-replay',
  async run(s) {
    const sourceId = 'hist-dlq';
    await source(s, sourceId, { retryPolicy: 'partnerHttpQuick' });
    const dates = [DATE, '2026-06-02'];
    s.partner.faults.add({ sourceId, kind: 'status', status: 422, times: dates.length });
    const failed = await Promise.all(
      dates.map((date) => fetchOf(s, sourceId, 'dlq-fetch-records-dead-lettered', date)),
    );
    const replay = await startReplay(
      { prisma: s.ctx.prisma, temporal: s.client, taskQueue: s.ctx.taskQueue },
      { filter: { sourceId }, ratePerSecond: 5, actor: 'record-histories' },
    );
    const replayHandle = s.client.workflow.getHandle(replayWorkflowId(replay.replayId));
    await replayHandle.result();
    const first = failed[0] as Execution;
    return [
      first,
      {
        name: 'dlq-replay-dead-letters',
        workflowId: replay.workflowId,
        runId: await runIdOf(s.client, replay.workflowId),
      },
      {
        name: 'dlq-fetch-records-replayed',
        workflowId: first.workflowId,
        runId: await runIdOf(s.client, first.workflowId),
      },
    ];
  },
};

export const scheduled: Scenario = {
  name: 'scheduled',
  run(s) {
    return triggeredRun(s, 'hist-sched', FETCH_RECORDS, {
      trigger: 'scheduled-fetch',
      run: 'scheduled-fetch-records',
    });
  },
};

/**
 * A Schedule's trigger and a dead-letter replay starting their child runs with the source as
 * fairness key (workflows/run-type.ts `childRunPriority`), each with the run it started.
 */
export const childFairness: Scenario = {
  name: 'child-fairness',
  async run(s) {
    const scheduledRuns = await triggeredRun(s, 'hist-child-keyed', FETCH_RECORDS, {
      trigger: 'scheduled-fetch-keyed',
      run: 'fetch-run-scheduled-keyed',
    });
    const sourceId = 'hist-dlq-keyed';
    await source(s, sourceId, { retryPolicy: 'partnerHttpQuick' });
    s.partner.faults.add({ sourceId, kind: 'status', status: 422 });
    const failed = await fetchOf(s, sourceId, 'fetch-run-dead-lettered-keyed');
    const replay = await startReplay(
      { prisma: s.ctx.prisma, temporal: s.client, taskQueue: s.ctx.taskQueue },
      { filter: { sourceId }, ratePerSecond: 5, actor: 'record-histories' },
    );
    await s.client.workflow.getHandle(replayWorkflowId(replay.replayId)).result();
    return [
      ...scheduledRuns,
      {
        name: 'dlq-replay-keyed',
        workflowId: replay.workflowId,
        runId: await runIdOf(s.client, replay.workflowId),
      },
      {
        name: 'fetch-run-replayed-keyed',
        workflowId: failed.workflowId,
        runId: await runIdOf(s.client, failed.workflowId),
      },
    ];
  },
};
