/**
 * History scenarios of the run workflow under its generic type (`fetchRunWorkflow`, issue 37): a
 * run that fails for good (its `FetchStatus` in the run's words, `dead_lettered`, behind its
 * patch), and a schedule's trigger that starts its child run under the new type (behind its
 * patch) with that run.
 */
import { scheduleIdFor, syncSchedules } from '../client/schedules.ts';
import { FETCH_RECORDS } from '../contract/business-key.ts';
import { waitFor } from '../test/helpers/outbox.ts';
import type { ScheduledFetchResult } from '../workflows/scheduled-fetch.ts';
import { fetchOf, runIdOf, type Scenario, source, WAIT_MS } from './history-scenario-steps.ts';

export const genericNames: Scenario = {
  name: 'generic-names',
  async run(s) {
    const failing = 'hist-run-dead';
    await source(s, failing);
    // Not found: non-retryable, so the run ends dead-lettered at its first page.
    s.partner.faults.add({ sourceId: failing, kind: 'status', status: 404 });
    const dead = await fetchOf(s, failing, 'fetch-run-dead-lettered');

    const sourceId = 'hist-run-sched';
    // A cron that never comes due while recording: only the trigger starts it.
    await source(s, sourceId, { schedule: { cron: '0 2 1 1 *' } });
    await syncSchedules(s.ctx);
    const schedule = s.client.schedule.getHandle(
      scheduleIdFor(s.ctx.taskQueue, { id: sourceId, jobType: FETCH_RECORDS }),
    );
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
        dead,
        { name: 'scheduled-fetch-run', workflowId: trigger.workflowId, runId: trigger.firstExecutionRunId },
        {
          name: 'scheduled-fetch-run-child',
          workflowId: result.workflowId,
          runId: await runIdOf(s.client, result.workflowId),
        },
      ];
    } finally {
      await schedule.delete();
    }
  },
};
