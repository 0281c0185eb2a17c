/**
 * The scenarios scripts/record-histories.ts runs for real (worker, database, demo partner) to
 * record workflow histories for the replay gate. Each returns the executions to record, by
 * fixture name; test/helpers/history-fixtures.ts lists what each fixture must show.
 * Small on purpose (few pages of 10 records): the fixtures live in the repository.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { startReplay } from '../client/replay.ts';
import { scheduleIdFor, syncSchedules } from '../client/schedules.ts';
import { pauseSource, resumeSource } from '../client/sources.ts';
import {
  type DurableFetchContext,
  launchFetch,
  prepareFetch,
  SEARCH_KEYS,
  startFetch,
} from '../client/start-fetch.ts';
import type { PartnerServer } from '../partner/server.ts';
import type { Prisma } from '../prisma/generated/client.ts';
import { compensationWorkflowIdFor, FETCH_RECORDS } from '../workflows/business-key.ts';
import { replayWorkflowId } from '../workflows/replay-api.ts';
import type { ScheduledFetchResult } from '../workflows/scheduled-fetch.ts';
import { createSource } from '../test/helpers/deps.ts';
import { PLANTED_SECRET_REF } from '../test/helpers/history-fixtures.ts';
import { waitFor } from '../test/helpers/outbox.ts';

/** One workflow execution to record (continued executions are followed from it). */
export interface Execution {
  /** Fixture name without `.json`; a continued run's executions get `-1`, `-2`, … */
  name: string;
  workflowId: string;
  runId: string;
}

export interface ScenarioContext {
  ctx: DurableFetchContext;
  client: Client;
  partner: PartnerServer;
}

export interface Scenario {
  name: string;
  run(s: ScenarioContext): Promise<Execution[]>;
}

const DATE = '2026-06-01';
/** Records each source's partner serves (sources are `hist-<scenario>`). */
export const RECORDS: Record<string, number> = { 'hist-continue': 50, 'hist-happy': 25, 'hist-pause': 30 };
export const DEFAULT_RECORDS = 15;
const WAIT_MS = 60_000;

async function source(
  s: ScenarioContext,
  id: string,
  extra: Omit<Prisma.SourceUncheckedCreateInput, 'id' | 'name' | 'baseUrl'> = {},
) {
  // The credential by reference, as in production: the recording proves it never reaches history.
  await createSource(s.ctx.prisma, id, s.partner.url, {
    pageSize: 10,
    credentialsRef: PLANTED_SECRET_REF,
    ...extra,
  });
}

const runIdOf = async (client: Client, workflowId: string) =>
  (await client.workflow.getHandle(workflowId).describe()).runId;

/** True once the partner has taken (used up) every fault on `match`. */
const faultsTaken =
  (s: ScenarioContext, match: (f: { sourceId?: string; reference?: string }) => boolean) => () =>
    !s.partner.faults.list().some(match);

async function settled(handle: WorkflowHandle): Promise<void> {
  await handle.result().catch(() => undefined);
}

async function fetchOf(s: ScenarioContext, sourceId: string, name: string, date = DATE): Promise<Execution> {
  const started = await startFetch(s.ctx, { sourceId, date, requestedBy: 'test' });
  await settled(started.handle);
  return { name, workflowId: started.workflowId, runId: started.runId };
}

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

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'happy',
    async run(s) {
      await source(s, 'hist-happy');
      return [await fetchOf(s, 'hist-happy', 'fetch-records-happy')];
    },
  },
  {
    name: 'submit',
    async run(s) {
      await source(s, 'hist-submit', { submitSummary: true });
      return [await fetchOf(s, 'hist-submit', 'fetch-records-submit')];
    },
  },
  {
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
  },
  {
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
  },
  {
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
      return [
        { name: 'fetch-records-continue-as-new', workflowId: started.workflowId, runId: started.runId },
      ];
    },
  },
  { name: 'compensation-failed', run: (s) => compensated(s, 'failed') },
  { name: 'compensation-cancelled', run: (s) => compensated(s, 'cancelled') },
  {
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
  },
  {
    name: 'scheduled',
    async run(s) {
      const sourceId = 'hist-sched';
      // A cron that never comes due while recording: only the trigger starts it.
      await source(s, sourceId, { schedule: { cron: '0 2 1 1 *' } });
      await syncSchedules(s.ctx);
      const schedule = s.client.schedule.getHandle(scheduleIdFor(s.ctx.taskQueue, sourceId));
      try {
        await schedule.trigger();
        let action: { workflowId: string; firstExecutionRunId: string } | undefined;
        await waitFor(
          async () => {
            action = (await schedule.describe()).info.recentActions[0]?.action.workflow;
            return action !== undefined;
          },
          'the triggered start',
          WAIT_MS,
        );
        const trigger = action as { workflowId: string; firstExecutionRunId: string };
        const handle = s.client.workflow.getHandle(trigger.workflowId, trigger.firstExecutionRunId);
        const result = (await handle.result()) as ScheduledFetchResult;
        if (result.outcome !== 'ran')
          throw new Error(`the trigger ${result.outcome}, it did not run the child`);
        return [
          { name: 'scheduled-fetch', workflowId: trigger.workflowId, runId: trigger.firstExecutionRunId },
          {
            name: 'scheduled-fetch-records',
            workflowId: result.workflowId,
            runId: await runIdOf(s.client, result.workflowId),
          },
        ];
      } finally {
        await schedule.delete();
      }
    },
  },
  {
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
  },
];
