// The bench's count of Temporal Cloud billable Actions (issue 39), on recorded histories whose
// counts are worked out by hand from their events.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { type ActionEvent, billableActions, naiveActions, sumActions } from '../bench/billable-actions.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';

async function eventsOf(name: string): Promise<ActionEvent[]> {
  const text = await readFile(path.join(PROJECT_ROOT, 'test', 'histories', name), 'utf8');
  const fixture = JSON.parse(text) as { history?: { events: ActionEvent[] }; events?: ActionEvent[] };
  return (fixture.history ?? fixture).events ?? [];
}

void describe('billable actions of a history', () => {
  it('a two-page run with local database steps: the start, 2 fetch activities, 3 workflow tasks with its 4 local activities, the deadline timer, 2 status upserts (the 3 TemporalChangeVersion upserts are free)', async () => {
    const n = billableActions(await eventsOf('fetch-records-local-steps.json'));
    assert.deepEqual(
      { ...n },
      {
        total: 9,
        started: 1,
        activityAttempts: 2,
        localActivityTasks: 3,
        timers: 1,
        upserts: 2,
        signals: 0,
        children: 0,
        steps: 6,
      },
    );
    assert.equal(naiveActions(n.steps), 7);
  });

  it('an activity retried counts each attempt', () => {
    const events: ActionEvent[] = [
      { eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED' },
      { eventType: 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' },
      { eventType: 'EVENT_TYPE_ACTIVITY_TASK_STARTED', activityTaskStartedEventAttributes: { attempt: 3 } },
      { eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED' },
    ];
    const n = billableActions(events);
    assert.equal(n.activityAttempts, 3);
    assert.equal(n.signals, 1);
    assert.equal(n.total, 5);
  });

  it('a run continued as new: every execution started counts', async () => {
    const parts = await Promise.all(
      [1, 2, 3].map(async (i) => billableActions(await eventsOf(`fetch-records-continue-as-new-${i}.json`))),
    );
    const sum = sumActions(parts);
    assert.equal(sum.started, 3);
    assert.equal(
      sum.total,
      parts.reduce((t, p) => t + p.total, 0),
    );
  });
});
