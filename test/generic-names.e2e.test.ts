// The run workflow and the schedules under names of no job (issue 37), on the real dev server and
// PostgreSQL: new runs start as `fetchRunWorkflow` (by the client, a schedule and the outbox), a
// run started as `fetchRecordsWorkflow` still runs to its end on today's worker, `FetchStatus`
// speaks the run's words, and `schedules sync` moves a schedule from its legacy id
// (`<queue>/fetch-records/<source>`) to `<queue>/<job>/<source>`, keeping its pause, finishing a
// move a crashed sync left half done, with lookups finding the schedule under either id meanwhile.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Client, ScheduleNotFoundError } from '@temporalio/client';
import {
  desiredSchedule,
  legacyScheduleIdFor,
  parseScheduleId,
  scheduleIdFor,
} from '../client/schedule-spec.ts';
import { findScheduleId, syncSchedules } from '../client/schedules.ts';
import { pauseSource } from '../client/sources/pause.ts';
import { startFetch } from '../client/start-fetch.ts';
import { workflowIdFor } from '../contract/business-key.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { SEARCH_KEYS } from '../client/start-fetch.ts';
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
  partner = await startPartner({ port: 0, recordCount: () => 5 });
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
const YEARLY = { cron: '0 2 1 1 *' };

/** The ids of this test's schedules as Temporal has them (described one by one: listing lags). */
async function exists(scheduleId: string): Promise<boolean> {
  try {
    await client.schedule.getHandle(scheduleId).describe();
    return true;
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return false;
    throw err;
  }
}

/**
 * A schedule as `schedules sync` made them before ids named the job: the source's schedule,
 * created under its legacy id (the action as today's, which old ones matched but for the id).
 */
async function legacySchedule(sourceId: string, state?: { paused: boolean; note: string }) {
  const row = await db.prisma.source.findUniqueOrThrow({ where: { id: sourceId } });
  const d = desiredSchedule(row, worker.taskQueue, 0);
  assert.ok(!('problem' in d), JSON.stringify(d));
  const legacyId = legacyScheduleIdFor(worker.taskQueue, sourceId);
  await client.schedule.create({ ...d.options, scheduleId: legacyId, ...(state ? { state } : {}) });
  return { legacyId, d };
}

const stateOf = async (scheduleId: string) => {
  const { state } = await client.schedule.getHandle(scheduleId).describe();
  return { paused: state.paused, note: state.note ?? '' };
};

describe('generic names: the run workflow type', () => {
  it('startFetch starts fetchRunWorkflow; a dead-lettered run shows FetchStatus dead_lettered', async () => {
    const sourceId = 'gen-dead';
    await createSource(db.prisma, sourceId, partner.url);
    partner.faults.add({ sourceId, kind: 'status', status: 404 });
    await worker.run(async () => {
      const started = await startFetch(ctx(), { sourceId, date: '2026-11-02' });
      await assert.rejects(started.handle.result());
      const described = await started.handle.describe();
      assert.equal(described.type, 'fetchRunWorkflow');
      assert.equal(described.typedSearchAttributes.get(SEARCH_KEYS.status), 'dead_lettered');
      const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
      assert.equal(run.status, 'dead_lettered', 'the same word as the run row');
    });
  });

  it('a run started as fetchRecordsWorkflow (before the rename) still runs to its end on this worker', async () => {
    const sourceId = 'gen-legacy';
    await createSource(db.prisma, sourceId, partner.url);
    const businessDate = '2026-11-03';
    await worker.run(async () => {
      const handle = await client.workflow.start('fetchRecordsWorkflow', {
        workflowId: workflowIdFor({ jobType: 'fetch-records', sourceId, businessDate }),
        taskQueue: worker.taskQueue,
        args: [
          {
            sourceId,
            businessDate,
            correlationId: '00000000-0000-4000-8000-000000000037',
            requestedBy: 'cli',
          },
        ],
      });
      const result = (await handle.result()) as { status: string; records: number };
      assert.deepEqual([result.status, result.records], ['succeeded', 5]);
      const described = await handle.describe();
      assert.equal(described.type, 'fetchRecordsWorkflow');
      assert.equal(described.status.name, 'COMPLETED');
      assert.equal(described.typedSearchAttributes.get(SEARCH_KEYS.status), 'succeeded');
    });
  });

  it('a schedule starts its run as fetchRunWorkflow', async () => {
    const sourceId = 'gen-sched';
    await createSource(db.prisma, sourceId, partner.url, { schedule: YEARLY });
    await worker.run(async () => {
      await syncSchedules(ctx());
      const handle = client.schedule.getHandle(
        scheduleIdFor(worker.taskQueue, { id: sourceId, jobType: 'fetch-records' }),
      );
      await handle.trigger();
      await waitFor(async () => (await db.prisma.fetchRun.count({ where: { sourceId } })) === 1, 'the run');
      const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
      const child = client.workflow.getHandle(run.workflowId);
      await child.result();
      assert.equal((await child.describe()).type, 'fetchRunWorkflow');
    });
  });
});

describe('generic names: schedule ids', () => {
  it('ids are <queue>/<job>/<source>, and the legacy id is the fetch-records form', () => {
    assert.equal(scheduleIdFor('q', { id: 'fx1', jobType: 'exchange-rates' }), 'q/exchange-rates/fx1');
    assert.equal(legacyScheduleIdFor('q', 'fx1'), 'q/fetch-records/fx1');
    assert.deepEqual(parseScheduleId('q', 'q/http/cat'), { id: 'cat', jobType: 'http' });
    assert.equal(parseScheduleId('q', 'q/eu/http/cat'), undefined, "another deployment's (queue q/eu)");
    assert.equal(parseScheduleId('q', 'qq/http/cat'), undefined);
  });

  it('sync moves a paused legacy schedule to its new id, still paused with its note; a second sync changes nothing', async () => {
    const sourceId = 'gen-mig-paused';
    await createSource(db.prisma, sourceId, partner.url, { jobType: 'exchange-rates', schedule: YEARLY });
    const { legacyId, d } = await legacySchedule(sourceId, { paused: true, note: 'partner outage' });
    assert.equal(await findScheduleId(ctx(), sourceId), legacyId, 'before sync: the legacy one');

    const dry = await syncSchedules(ctx(), { dryRun: true });
    assert.deepEqual(
      dry.filter((c) => c.sourceId === sourceId),
      [{ scheduleId: d.scheduleId, sourceId, change: 'migrated', from: legacyId }],
    );
    assert.deepEqual(
      [await exists(legacyId), await exists(d.scheduleId)],
      [true, false],
      'dry: nothing moved',
    );

    const changes = await syncSchedules(ctx());
    assert.deepEqual(
      changes.filter((c) => c.sourceId === sourceId),
      [{ scheduleId: d.scheduleId, sourceId, change: 'migrated', from: legacyId }],
    );
    assert.equal(d.scheduleId, `${worker.taskQueue}/exchange-rates/${sourceId}`);
    assert.deepEqual([await exists(legacyId), await exists(d.scheduleId)], [false, true]);
    assert.deepEqual(await stateOf(d.scheduleId), { paused: true, note: 'partner outage' });
    assert.equal(await findScheduleId(ctx(), sourceId), d.scheduleId, 'after sync: the new one');

    // Listing lags: until the legacy one drops out of it, sync must not report it deleted either.
    const again = await syncSchedules(ctx());
    assert.deepEqual(
      again.filter((c) => c.sourceId === sourceId).map((c) => c.change),
      ['unchanged'],
    );
  });

  it('sync moves a running legacy schedule: the new one runs, the legacy one is gone', async () => {
    const sourceId = 'gen-mig-live';
    await createSource(db.prisma, sourceId, partner.url, { jobType: 'http', schedule: YEARLY });
    const { legacyId, d } = await legacySchedule(sourceId);
    const changes = await syncSchedules(ctx());
    assert.deepEqual(
      changes.filter((c) => c.sourceId === sourceId).map((c) => [c.change, c.scheduleId]),
      [['migrated', `${worker.taskQueue}/http/${sourceId}`]],
    );
    assert.equal(await exists(legacyId), false);
    const state = await stateOf(d.scheduleId);
    assert.equal(state.paused, false);
    assert.doesNotMatch(state.note, /migrating/, 'the note of the move is gone with it');
  });

  it('a sync that died after creating the new schedule, or after deleting the legacy one, is finished by the next', async () => {
    // Died between create and delete: both exist, the new one paused with the legacy state in its note.
    const both = 'gen-mig-crash1';
    await createSource(db.prisma, both, partner.url, { jobType: 'exchange-rates', schedule: YEARLY });
    const first = await legacySchedule(both);
    const half = {
      paused: true,
      note: `durable-fetch: migrating from ${first.legacyId}; it was {"paused":false}`,
    };
    await client.schedule.create({ ...first.d.options, state: half });
    // Meanwhile the legacy one is the source's schedule: an operator's pause lands on it.
    assert.equal(await findScheduleId(ctx(), both), first.legacyId);
    await pauseSource(ctx(), both, { reason: 'during the move', actor: 'dana' });
    assert.deepEqual((await stateOf(first.legacyId)).paused, true);

    // Died between delete and restore: only the new one, paused, carrying the legacy one's state.
    const later = 'gen-mig-crash2';
    await createSource(db.prisma, later, partner.url, { jobType: 'exchange-rates', schedule: YEARLY });
    const row = await db.prisma.source.findUniqueOrThrow({ where: { id: later } });
    const second = desiredSchedule(row, worker.taskQueue, 0);
    assert.ok(!('problem' in second));
    const legacyOfSecond = legacyScheduleIdFor(worker.taskQueue, later);
    await client.schedule.create({
      ...second.options,
      state: {
        paused: true,
        note: `durable-fetch: migrating from ${legacyOfSecond}; it was {"paused":false}`,
      },
    });

    const changes = await syncSchedules(ctx());
    assert.deepEqual(
      changes.filter((c) => c.sourceId === both || c.sourceId === later).map((c) => [c.sourceId, c.change]),
      [
        [both, 'migrated'],
        [later, 'migrated'],
      ],
    );
    assert.equal(await exists(first.legacyId), false);
    const moved = await stateOf(first.d.scheduleId);
    assert.equal(moved.paused, true, "the operator's pause, made on the legacy one, carried over");
    assert.match(moved.note, /during the move/);
    assert.deepEqual((await stateOf(second.scheduleId)).paused, false, 'restored from its note');
    assert.deepEqual(
      (await syncSchedules(ctx()))
        .filter((c) => c.sourceId === both || c.sourceId === later)
        .map((c) => c.change),
      ['unchanged', 'unchanged'],
    );
  });

  it("sync deletes a removed source's schedule under its legacy id as under its new one", async () => {
    const sourceId = 'gen-mig-gone';
    await createSource(db.prisma, sourceId, partner.url, { jobType: 'exchange-rates', schedule: YEARLY });
    const { legacyId } = await legacySchedule(sourceId);
    await db.prisma.source.update({ where: { id: sourceId }, data: { enabled: false } });
    await waitFor(async () => {
      const changes = await syncSchedules(ctx());
      return changes.some((c) => c.scheduleId === legacyId && c.change === 'deleted');
    }, 'the legacy schedule of a disabled source deleted');
    assert.equal(await exists(legacyId), false);
  });
});
