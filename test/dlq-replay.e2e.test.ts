// Rate-limited replay of dead letters (R8, R12e), end to end on the shared Temporal
// server, a cloned database and the demo partner over real sockets: the drill (20 runs fail on a
// 422, the fault is fixed, `dlq replay --rate 5` brings all of them home) and a replay that
// survives its worker being SIGKILLed halfway.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { createHttpClient } from '../activities/http.ts';
import { reconcileRuns } from '../client/reconcile/index.ts';
import { controlReplay, startReplay } from '../client/dead-letters/replay.ts';
import { startFetch, type DurableFetchContext } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { workflowIdFor } from '../contract/business-key.ts';
import { replayProgressQuery, type ReplayReport, replayWorkflowId } from '../workflows/replay-api.ts';
import { runCli } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { spawnTs, type Spawned } from './helpers/process.ts';
import { temporalAddress, testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

const RECORDS = 30; // one page per run
let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: TestWorker;
let ctx: DurableFetchContext;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => RECORDS });
  client = await testClient();
  worker = await testWorker(testDeps(db.prisma));
  ctx = {
    temporal: client,
    prisma: db.prisma,
    taskQueue: worker.taskQueue,
    now: () => new Date('2026-11-29T12:00:00Z'),
  };
});
after(async () => {
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

const dates = (n: number, month: string) =>
  Array.from({ length: n }, (_, i) => `2026-${month}-${String(i + 1).padStart(2, '0')}`);

/** `n` runs of `sourceId` that fail for good on a 422 from the partner: `n` open dead letters. */
async function failRuns(sourceId: string, days: string[]): Promise<void> {
  await createSource(db.prisma, sourceId, partner.url);
  await db.prisma.source.update({ where: { id: sourceId }, data: { retryPolicy: 'partnerHttpQuick' } });
  partner.faults.add({ sourceId, kind: 'status', status: 422, times: days.length });
  await worker.run(async () => {
    const handles = await Promise.all(
      days.map(async (date) => (await startFetch(ctx, { sourceId, date, requestedBy: 'test' })).handle),
    );
    await Promise.all(handles.map((h) => h.result().catch(() => undefined)));
  });
  assert.equal(partner.faults.list().length, 0, 'the fault is used up: fixed for the replay');
  const letters = await db.prisma.deadLetter.findMany({ where: { sourceId } });
  assert.equal(letters.length, days.length);
  assert.ok(
    letters.every((l) => l.status === 'open' && l.errorType === 'InvalidInput' && l.errorCode === 'HTTP_422'),
  );
}

/** Start times of the replayed runs (the latest execution of each business key), sorted. */
async function replayStartTimes(sourceId: string, days: string[]): Promise<number[]> {
  const starts = await Promise.all(
    days.map(async (businessDate) => {
      const d = await client.workflow
        .getHandle(workflowIdFor({ jobType: 'fetch-records', sourceId, businessDate }))
        .describe();
      return d.startTime.getTime();
    }),
  );
  return starts.sort((a, b) => a - b);
}

/** What the database says the replay did, to hold the report against. */
async function stateOf(sourceId: string) {
  const runs = await db.prisma.fetchRun.findMany({ where: { sourceId } });
  const runIds = runs.map((r) => r.id);
  const events = await db.prisma.outboxEvent.findMany({ where: { aggregateId: { in: runIds } } });
  return {
    runs,
    records: await db.prisma.fetchedRecord.count({ where: { sourceId } }),
    events: events.length,
    distinctEvents: new Set(events.map((e) => e.id)).size,
    letters: await db.prisma.deadLetter.findMany({ where: { sourceId } }),
    replayAudits: await db.prisma.auditEntry.count({
      where: {
        action: 'dead_letter.replay',
        targetId: { in: (await db.prisma.deadLetter.findMany({ where: { sourceId } })).map((l) => l.id) },
      },
    }),
  };
}

describe('dead-letter replay', { concurrency: true }, () => {
  it('the drill: 20 runs dead-lettered on a 422, fault fixed, `dlq replay --rate 5` brings all 20 home at ≤ 5 starts/s', async () => {
    const sourceId = 'replay-drill';
    const days = dates(20, '03');
    await failRuns(sourceId, days);

    const env = {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: worker.taskQueue,
    };
    const dry = await runCli(
      ['dlq', 'replay', '--source', sourceId, '--rate', '5', '--dry-run', '--json'],
      env,
    );
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal((JSON.parse(dry.stdout) as { count: number }).count, 20);
    assert.equal(
      await db.prisma.deadLetter.count({ where: { sourceId, status: 'open' } }),
      20,
      'dry run changes nothing',
    );

    const replay = await worker.run(() =>
      runCli(
        ['dlq', 'replay', '--source', sourceId, '--rate', '5', '--by', 'ops-drill', '--json'],
        env,
        120_000,
      ),
    );
    assert.equal(replay.code, 0, `${replay.stdout}\n${replay.stderr}`);
    assert.match(replay.stderr, /replayed \d+\/20 at/, 'progress is shown while it runs');
    const report = JSON.parse(replay.stdout) as ReplayReport;

    // The observed start rate never exceeds the limit: at most 5 starts in any 1 s window.
    const starts = await replayStartTimes(sourceId, days);
    for (let i = 0; i + 5 < starts.length; i++) {
      const window = (starts[i + 5] as number) - (starts[i] as number);
      assert.ok(window >= 1000, `starts ${i}..${i + 5} within ${window} ms`);
    }

    // The report's numbers are the database's.
    const after = await stateOf(sourceId);
    assert.deepEqual(
      {
        total: report.total,
        replayed: report.replayed,
        succeeded: report.succeeded,
        stillFailing: report.stillFailing,
        suppressed: report.suppressed,
        newDeadLetters: report.newDeadLetters,
        recordsCreated: report.recordsCreated,
        eventsCreated: report.eventsCreated,
        cancelled: report.cancelled,
      },
      {
        total: 20,
        replayed: 20,
        succeeded: after.runs.filter((r) => r.status === 'succeeded').length,
        stillFailing: 0,
        suppressed: 0,
        newDeadLetters: after.letters.length - 20,
        recordsCreated: after.records,
        eventsCreated: after.events,
        cancelled: false,
      },
    );
    assert.equal(report.succeeded, 20);
    // No duplicate rows or events: one page event and one completion per run, each record once.
    assert.equal(after.records, 20 * RECORDS);
    assert.equal(after.events, 20 * 2);
    assert.equal(after.distinctEvents, after.events);
    assert.ok(after.letters.every((l) => l.status === 'retried' && l.closedBy === 'ops-drill'));
    assert.equal(after.replayAudits, 20);
    // The partner saw each date twice (before reconciling reads it again): the 422, then the
    // replay's one successful request.
    for (const date of days) {
      assert.deepEqual(
        partner.ledger.entries({ sourceId, date }).map((e) => e.status),
        [422, 200],
        date,
      );
    }
    // Reconciliation against the partner finds nothing amiss, date by date (the CLI for one).
    const http = createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 5_000 });
    try {
      for (const date of days) {
        const found = await reconcileRuns(
          { prisma: db.prisma, http, secret: () => undefined },
          { date, sourceId },
        );
        assert.equal(found.mismatches, 0, `${date}: ${JSON.stringify(found.runs[0]?.mismatches)}`);
        assert.equal(found.runs[0]?.partnerRecords, RECORDS);
      }
    } finally {
      await http.close();
    }
    const reconciled = await runCli(['reconcile', '--date', days[0] as string, '--source', sourceId], env);
    assert.equal(reconciled.code, 0, `${reconciled.stdout}\n${reconciled.stderr}`);
    assert.match(reconciled.stdout, /1 run, 0 mismatches/);
  });

  it('a replay survives its worker being SIGKILLed halfway and starts no run twice', async () => {
    const sourceId = 'replay-kill';
    const days = dates(10, '04');
    await failRuns(sourceId, days);

    const taskQueue = `test-replay-kill-${randomUUID()}`;
    const workers: Spawned[] = [];
    const spawnWorker = () => {
      const w = spawnTs(['bin/durable-fetch.js', 'worker'], {
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: temporalAddress(),
        DURABLE_FETCH_TASK_QUEUE: taskQueue,
        LOG_LEVEL: 'warn',
      });
      workers.push(w);
      return w;
    };
    let report: ReplayReport;
    try {
      const a = spawnWorker();
      await a.waitFor(/worker polling task queue/, 60_000);
      const { replayId } = await startReplay(
        { prisma: db.prisma, temporal: client, taskQueue },
        { filter: { sourceId }, ratePerSecond: 2, actor: 'ops-kill' },
      );
      const handle = client.workflow.getHandle(replayWorkflowId(replayId));
      let started = 0;
      for (let i = 0; i < 300 && started < 4; i++) {
        started = (await handle.query(replayProgressQuery)).started;
        if (started < 4) await sleep(100);
      }
      assert.ok(started >= 4 && started < 10, `killed halfway (${started} started)`);
      a.child.kill('SIGKILL');
      assert.equal((await a.ended).signal, 'SIGKILL');

      const b = spawnWorker();
      await b.waitFor(/worker polling task queue/, 60_000);
      report = (await handle.result()) as ReplayReport;
      assert.equal(await b.stop('SIGTERM', 30_000), 0, b.output());
    } finally {
      for (const w of workers) await w.stop('SIGKILL', 5_000);
    }
    assert.equal(report.replayed, 10);
    assert.equal(report.succeeded, 10);
    assert.equal(report.suppressed, 0);
    // Each key ran exactly twice: the failed run and one replayed run (the claim counts them).
    const runs = await db.prisma.fetchRun.findMany({ where: { sourceId } });
    assert.deepEqual(
      runs.map((r) => [r.status, r.attempt]),
      days.map(() => ['succeeded', 2]),
    );
    // A page request cut off by the kill may be asked again (a read, same Idempotency-Key).
    for (const date of days) {
      const [first, ...rest] = partner.ledger.entries({ sourceId, date });
      assert.equal(first?.status, 422, date);
      assert.ok(rest.length >= 1 && rest.every((e) => e.status === 200), `${date}: replayed`);
    }
    const after = await stateOf(sourceId);
    assert.equal(after.replayAudits, 10, 'each letter replayed once');
    assert.equal(after.records, 10 * RECORDS);
  });

  it('a replay can be paused (no new starts), resumed, and cancelled: letters not started are given back and reported', async () => {
    const sourceId = 'replay-steer';
    const days = dates(6, '05');
    await failRuns(sourceId, days);
    const steer = { prisma: db.prisma, temporal: client };
    const report = await worker.run(async () => {
      const { replayId } = await startReplay(
        { ...steer, taskQueue: worker.taskQueue },
        { filter: { sourceId }, ratePerSecond: 1, actor: 'ops-steer' },
      );
      const handle = client.workflow.getHandle(replayWorkflowId(replayId));
      const progress = () => handle.query(replayProgressQuery);
      const until = async (ok: (p: Awaited<ReturnType<typeof progress>>) => boolean) => {
        for (let i = 0; i < 300; i++) {
          const p = await progress();
          if (ok(p)) return p;
          await sleep(100);
        }
        throw new Error(`replay progress never got there: ${JSON.stringify(await progress())}`);
      };
      await until((p) => p.started >= 2);
      await controlReplay(steer, replayId, 'pause', 'ops-steer');
      const paused = await until((p) => p.paused);
      await sleep(2_500); // more than two intervals at 1/s
      const still = await progress();
      assert.equal(
        still.started + still.suppressed,
        paused.started + paused.suppressed,
        'no start while paused',
      );
      await controlReplay(steer, replayId, 'resume', 'ops-steer');
      await until((p) => !p.paused && p.started >= still.started + 1);
      await controlReplay(steer, replayId, 'cancel', 'ops-steer');
      return (await handle.result()) as ReplayReport;
    });
    assert.equal(report.cancelled, true);
    assert.equal(report.replayed + report.notStarted, 6);
    assert.ok(report.notStarted >= 1, `cancelled before the end (${report.replayed} replayed)`);
    // Letters not started are open again, free for the next replay or a retry.
    const letters = await db.prisma.deadLetter.findMany({ where: { sourceId } });
    const open = letters.filter((l) => l.status === 'open');
    assert.equal(open.length, report.notStarted);
    assert.ok(open.every((l) => l.replayId === null));
    assert.equal(letters.filter((l) => l.status === 'retried').length, report.replayed);
    const audit = await db.prisma.auditEntry.findMany({
      where: { targetType: 'replay', actor: 'ops-steer' },
    });
    assert.deepEqual(audit.map((a) => a.action).sort(), [
      'replay.cancel',
      'replay.pause',
      'replay.resume',
      'replay.start',
    ]);
  });
});
