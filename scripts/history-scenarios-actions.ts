/**
 * History scenario of a run that shows its status from its start (issue 39): a Schedule's trigger
 * starts its child run with `FetchStatus` `running` (behind its patch), and the run, which shows
 * it already after its claim, upserts only its end (behind its own patch): the upsert Temporal
 * Cloud would bill is gone.
 */
import { scheduleIdFor, syncSchedules } from '../client/schedules.ts';
import { FETCH_RECORDS } from '../contract/business-key.ts';
import { waitFor } from '../test/helpers/outbox.ts';
import type { ScheduledFetchResult } from '../workflows/scheduled-fetch.ts';
import { runIdOf, type Scenario, source, WAIT_MS } from './history-scenario-steps.ts';

export const statusAtStart: Scenario = {
  name: 'status-at-start',
  async run(s) {
    const sourceId = 'hist-status-start';
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
        {
          name: 'scheduled-fetch-status-at-start',
          workflowId: trigger.workflowId,
          runId: trigger.firstExecutionRunId,
        },
        {
          name: 'fetch-run-status-at-start',
          workflowId: result.workflowId,
          runId: await runIdOf(s.client, result.workflowId),
        },
      ];
    } finally {
      await schedule.delete();
    }
  },
};
