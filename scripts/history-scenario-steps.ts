/**
 * What every workflow history scenario (scripts/history-scenarios.ts) is made of: the types a
 * scenario takes and returns, the recording's business date and wait budget, and the steps the
 * scenarios share (create a source, run a fetch to its end, trigger a source's Schedule, wait for
 * the partner's faults).
 */
import { randomBytes } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { type DurableFetchContext, startFetch } from '../client/start-fetch.ts';
import type { PartnerServer } from '../partner/server.ts';
import type { Prisma } from '../prisma/generated/client.ts';
import { createSource } from '../test/helpers/deps.ts';
import { PLANTED_SECRET_REF } from '../test/helpers/history-fixtures.ts';
import { parseMasterKey } from '../runtime/credential-cipher.ts';
import { scheduleIdFor, syncSchedules } from '../client/schedules.ts';
import { waitFor } from '../test/helpers/outbox.ts';
import type { ScheduledFetchResult } from '../workflows/scheduled-fetch.ts';

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
  /** The name of the recording's database (on the test server), for a scenario that cuts it. */
  database: string;
}

export interface Scenario {
  name: string;
  run(s: ScenarioContext): Promise<Execution[]>;
}

/** The business date of every recorded run unless a scenario needs a second one. */
export const DATE = '2026-06-01';
/** How long a scenario waits for one thing it expects (a held request, a status) before failing. */
export const WAIT_MS = 60_000;

/** The recording's credentials key: its worker's token provider opens what scenarios seal with it. */
export const HISTORY_CREDENTIALS_KEY = parseMasterKey(randomBytes(32).toString('base64'));

/** Creates source `id`, served by the demo partner: pages of 10, the planted credential by reference. */
export async function source(
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

/** The run id of the latest execution of `workflowId`. */
export const runIdOf = async (client: Client, workflowId: string) =>
  (await client.workflow.getHandle(workflowId).describe()).runId;

/** True once the partner has taken (used up) every fault on `match`. */
export const faultsTaken =
  (s: ScenarioContext, match: (f: { sourceId?: string; reference?: string }) => boolean) => () =>
    !s.partner.faults.list().some(match);

/** Waits until the workflow of `handle` closes, whatever its outcome. */
export async function settled(handle: WorkflowHandle): Promise<void> {
  await handle.result().catch(() => undefined);
}

/** Starts a fetch of `sourceId` for `date`, waits until it closes, and names it `name`. */
export async function fetchOf(
  s: ScenarioContext,
  sourceId: string,
  name: string,
  date = DATE,
): Promise<Execution> {
  const started = await startFetch(s.ctx, { sourceId, date, requestedBy: 'test' });
  await settled(started.handle);
  return { name, workflowId: started.workflowId, runId: started.runId };
}

/**
 * A source with a Schedule that never comes due while recording, triggered once: the trigger's
 * execution and the child run it started, both ended, named as `names` says.
 */
export async function triggeredRun(
  s: ScenarioContext,
  sourceId: string,
  jobType: string,
  names: { trigger: string; run: string },
): Promise<Execution[]> {
  // A cron that never comes due while recording: only the trigger starts it.
  await source(s, sourceId, { schedule: { cron: '0 2 1 1 *' } });
  await syncSchedules(s.ctx);
  const schedule = s.client.schedule.getHandle(scheduleIdFor(s.ctx.taskQueue, { id: sourceId, jobType }));
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
    if (result.outcome !== 'ran') throw new Error(`the trigger ${result.outcome}, it did not run the child`);
    return [
      { name: names.trigger, workflowId: trigger.workflowId, runId: trigger.firstExecutionRunId },
      { name: names.run, workflowId: result.workflowId, runId: await runIdOf(s.client, result.workflowId) },
    ];
  } finally {
    await schedule.delete();
  }
}
