// Temporal Schedules from the sources' config (R6), on the real dev server: sync is
// idempotent and owns only its task queue's schedules; a schedule's runs take their business date
// from the nominal time and share the business key with every other starter.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { scheduleIdFor, syncSchedules } from '../client/schedules.ts';
import { Prisma } from '../prisma/generated/client.ts';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { dateInTimeZone } from '../contract/business-date.ts';
import { scheduledBusinessDate } from '../workflows/scheduled-fetch.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { deleteTestSchedules, testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => 30 });
  client = await testClient();
  worker = await testWorker(testDeps(db.prisma));
});

after(async () => {
  try {
    if (client && worker) await deleteTestSchedules(client, [worker.taskQueue]);
  } finally {
    await client?.connection.close();
    await partner?.close();
    await db?.drop();
  }
});

const ctx = () => ({ temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue });

/** Scheduled (trigger) workflows of `sourceId` visible so far, optionally only running ones. */
async function scheduledStarts(sourceId: string, running = false): Promise<number> {
  let n = 0;
  const status = running ? ` AND ExecutionStatus = 'Running'` : '';
  for await (const _ of client.workflow.list({
    query: `WorkflowType = 'scheduledFetchWorkflow' AND FetchSource = '${sourceId}'${status}`,
  })) {
    n++;
  }
  return n;
}

describe('schedules', () => {
  it('scheduled business date: nominal time in the source timezone, plus the offset', () => {
    const nominal = new Date('2026-03-01T02:00:00Z');
    assert.equal(scheduledBusinessDate(nominal, 'UTC', -1), '2026-02-28');
    assert.equal(scheduledBusinessDate(nominal, 'UTC', 0), '2026-03-01');
    // 02:00 UTC is still the previous evening in New York.
    assert.equal(scheduledBusinessDate(nominal, 'America/New_York', 0), '2026-02-28');
    assert.equal(scheduledBusinessDate(new Date('2026-03-01T23:30:00Z'), 'Asia/Tokyo', -1), '2026-03-01');
  });

  it('sync is idempotent, keeps an operator pause, and deletes the schedule of a removed source', async () => {
    await createSource(db.prisma, 'sync-a', partner.url);
    await createSource(db.prisma, 'sync-b', partner.url);
    await db.prisma.source.update({ where: { id: 'sync-a' }, data: { schedule: { cron: '0 2 * * *' } } });
    await db.prisma.source.update({ where: { id: 'sync-b' }, data: { schedule: { every: '1d' } } });

    const dry = await syncSchedules(ctx(), { dryRun: true });
    assert.deepEqual(
      dry.map((c) => [c.sourceId, c.change]),
      [
        ['sync-a', 'created'],
        ['sync-b', 'created'],
      ],
    );
    const first = await syncSchedules(ctx());
    assert.deepEqual(
      first.map((c) => c.change),
      ['created', 'created'],
    );
    const second = await syncSchedules(ctx());
    assert.deepEqual(
      second.map((c) => [c.sourceId, c.change]),
      [
        ['sync-a', 'unchanged'],
        ['sync-b', 'unchanged'],
      ],
    );

    // An operator pauses a; the config of a changes; sync updates it and keeps the pause.
    const a = client.schedule.getHandle(
      scheduleIdFor(worker.taskQueue, { id: 'sync-a', jobType: 'fetch-records' }),
    );
    await a.pause('maintenance window');
    await db.prisma.source.update({ where: { id: 'sync-a' }, data: { schedule: { cron: '0 3 * * *' } } });
    assert.deepEqual(
      (await syncSchedules(ctx())).map((c) => [c.sourceId, c.change]),
      [
        ['sync-a', 'updated'],
        ['sync-b', 'unchanged'],
      ],
    );
    const described = await a.describe();
    assert.equal(described.state.paused, true);
    assert.equal(described.spec.calendars?.[0]?.hour?.[0]?.start, 3);

    // b is removed from config: its schedule goes (listing lags: retry until it shows up).
    await db.prisma.source.update({ where: { id: 'sync-b' }, data: { schedule: Prisma.DbNull } });
    await waitFor(async () => {
      const changes = await syncSchedules(ctx());
      return changes.some((c) => c.sourceId === 'sync-b' && c.change === 'deleted');
    }, 'the schedule of sync-b deleted');
    await assert.rejects(
      client.schedule
        .getHandle(scheduleIdFor(worker.taskQueue, { id: 'sync-b', jobType: 'fetch-records' }))
        .describe(),
    );
    assert.deepEqual(
      (await syncSchedules(ctx())).map((c) => [c.sourceId, c.change]),
      [['sync-a', 'unchanged']],
    );
  });

  it('an every-2s schedule runs the business key of the nominal date; pause stops new starts, resume restarts them', async () => {
    const sourceId = 'sched-every';
    await createSource(db.prisma, sourceId, partner.url);
    await db.prisma.source.update({ where: { id: sourceId }, data: { schedule: { every: '2s' } } });
    await worker.run(async () => {
      await syncSchedules(ctx());
      const handle = client.schedule.getHandle(
        scheduleIdFor(worker.taskQueue, { id: sourceId, jobType: 'fetch-records' }),
      );
      await waitFor(async () => (await scheduledStarts(sourceId)) >= 2, 'two scheduled starts', 60_000);
      const runs = await db.prisma.fetchRun.findMany({ where: { sourceId } });
      // Every start of the same date is one business key: one FetchRun, records stored once.
      const today = dateInTimeZone(new Date(), 'UTC');
      assert.equal(runs.length, 1);
      assert.ok(
        [today, dateInTimeZone(new Date(Date.now() - 60_000), 'UTC')].includes(
          runs[0]!.businessDate.toISOString().slice(0, 10),
        ),
      );
      assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), 30);
      // Started by the trigger as its child, the run is keyed by its source as every other start
      // is (R8): its workflow tasks, and the local page fetches inside them, take turns by source.
      const [first] = (await client.workflow.getHandle(runs[0]!.workflowId).fetchHistory()).events ?? [];
      const started = first?.workflowExecutionStartedEventAttributes;
      assert.ok(started?.parentWorkflowExecution, 'the run is a child of its trigger');
      assert.equal(started.priority?.fairnessKey, sourceId);

      await handle.pause('test pause');
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // a start in flight may land
      const paused = (await handle.describe()).info.numActionsTaken;
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      assert.equal((await handle.describe()).info.numActionsTaken, paused, 'no start while paused');

      await handle.unpause('test resume');
      await waitFor(
        async () => (await handle.describe()).info.numActionsTaken > paused,
        'a start after resume',
        30_000,
      );
      assert.equal(await db.prisma.fetchRun.count({ where: { sourceId } }), 1);
      await handle.delete();
    });
  });

  it('a scheduled trigger and an app-client start of the same date are one FetchRun', async () => {
    const sourceId = 'sched-trigger';
    await createSource(db.prisma, sourceId, partner.url);
    await db.prisma.source.update({ where: { id: sourceId }, data: { schedule: { cron: '0 2 1 1 *' } } });
    await worker.run(async () => {
      await syncSchedules(ctx());
      const handle = client.schedule.getHandle(
        scheduleIdFor(worker.taskQueue, { id: sourceId, jobType: 'fetch-records' }),
      );
      // Scheduled workflow ids end in the nominal time to the second: two triggers in the same
      // second would be one start, so the second waits.
      await handle.trigger();
      await waitFor(async () => (await scheduledStarts(sourceId)) >= 1, 'the first trigger started', 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await handle.trigger('ALLOW_ALL');
      const date = dateInTimeZone(new Date(), 'UTC');
      const app = await startFetch(ctx(), { sourceId, date });
      await app.handle.result();
      await waitFor(async () => (await scheduledStarts(sourceId)) >= 2, 'both triggers started', 30_000);
      await waitFor(async () => (await scheduledStarts(sourceId, true)) === 0, 'triggers finished', 30_000);
      assert.equal(await db.prisma.fetchRun.count({ where: { sourceId } }), 1);
      assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), 30);
      const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
      // Every starter ran or joined the one business-key workflow, never a workflow of its own.
      assert.equal(run.workflowId, app.workflowId);
      const byDate = `WorkflowType = 'scheduledFetchWorkflow' AND FetchSource = '${sourceId}' AND FetchDate = '${date}'`;
      await waitFor(
        async () => (await client.workflow.count(byDate)).count >= 2,
        'both triggers found by FetchDate',
        30_000,
      );
      for await (const trigger of client.workflow.list({ query: byDate })) {
        const result = (await client.workflow.getHandle(trigger.workflowId, trigger.runId).result()) as {
          workflowId: string;
        };
        assert.equal(result.workflowId, app.workflowId);
      }
      assert.equal(
        await db.prisma.outboxEvent.count({ where: { aggregateId: run.id } }),
        run.pagesStored + 1,
      );
    });
  });

  it('a cancelled date runs again when started again, resuming from its stored pages (same FetchRun)', async () => {
    const sourceId = 'sched-rerun';
    // Page fetches as activity tasks, so that the cancel lands between steps: as local ones (the
    // default), the held call times out (5 s, testDeps), its retry inside the worker succeeds and
    // the run ends within the workflow task that the cancel reaches only when it completes.
    await createSource(db.prisma, sourceId, partner.url, { pageSize: 10, localFetch: false });
    const date = '2026-10-10';
    // Hold the second page long enough to cancel the run there.
    partner.faults.add({ sourceId, kind: 'delay', delayMs: 60_000, afterRequests: 1, times: 1 });
    await worker.run(async () => {
      const first = await startFetch(ctx(), { sourceId, date });
      await waitFor(
        async () => (await db.prisma.fetchRun.findFirst({ where: { sourceId } }))?.pagesStored === 1,
        'first page stored',
      );
      await first.handle.cancel();
      await assert.rejects(first.handle.result());
      const cancelled = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
      assert.equal(cancelled.status, 'cancelled');

      const again = await startFetch(ctx(), { sourceId, date });
      assert.equal(again.joined, false);
      const result = await again.handle.result();
      assert.equal(result.status, 'succeeded');
      const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
      assert.deepEqual([run.id, run.status, run.recordsStored], [cancelled.id, 'succeeded', 30]);
      assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId } }), 30);
      // Resumed: the first page was fetched once, never again.
      assert.equal(partner.ledger.count({ sourceId, cursor: null }), 1);
    });
  });

  it('a schedule that would fetch future dates is refused by the future-date policy, unless the policy allows it', async () => {
    const sourceId = 'sched-future';
    await createSource(db.prisma, sourceId, partner.url);
    await db.prisma.source.update({
      where: { id: sourceId },
      data: { schedule: { cron: '0 2 * * *', dateOffsetDays: 1 } },
    });
    await assert.rejects(syncSchedules(ctx(), { dryRun: true }), (err: Error) => {
      assert.match(err.message, /source 'sched-future': schedule dateOffsetDays 1 would fetch future dates/);
      return true;
    });
    const allowed = await syncSchedules({ ...ctx(), maxFutureDays: 1 }, { dryRun: true });
    assert.ok(allowed.some((c) => c.sourceId === sourceId && c.change === 'created'));
    await db.prisma.source.update({ where: { id: sourceId }, data: { schedule: Prisma.DbNull } });
  });
});
