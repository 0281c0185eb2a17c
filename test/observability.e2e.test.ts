// Metrics and backlog signals (R10) on the shared Temporal server, a cloned database and
// the demo partner: scraping /metrics during runs with injected retries and a dead letter, and a
// task queue whose workers are gone while jobs keep arriving.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { pino } from 'pino';
import { startFetch, type DurableFetchContext } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { startSampler, type Sampler } from '../client/health.ts';
import { createFinishRun } from '../activities/run/finish-run.ts';
import {
  createMetrics,
  type Metrics,
  startMetricsServer,
  type MetricsServer,
} from '../runtime/metrics/metrics.ts';
import { runCli } from './helpers/cli.ts';
import { scrapeMetrics } from './helpers/metrics.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { insertHeldRun } from './helpers/job-rows.ts';
import { spawnTs } from './helpers/process.ts';
import { temporalAddress, testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let metrics: Metrics;
let server: MetricsServer;
let worker: TestWorker;
let ctx: DurableFetchContext;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => 40 });
  client = await testClient();
  metrics = createMetrics();
  server = await startMetricsServer(metrics, { host: '127.0.0.1', port: 0 });
  worker = await testWorker(testDeps(db.prisma, { metrics }));
  ctx = {
    temporal: client,
    prisma: db.prisma,
    taskQueue: worker.taskQueue,
    now: () => new Date('2026-11-29T12:00:00Z'),
  };
});
after(async () => {
  await server?.close();
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

const scrape = (url = server.url) => scrapeMetrics(url);

const sampler = (taskQueues: string[]): Sampler =>
  startSampler({
    prisma: db.prisma,
    temporal: () => Promise.resolve(client),
    namespace: 'default',
    taskQueues,
    metrics,
    intervalMs: 400,
    log: pino({ level: 'silent' }),
  });

describe('observability', () => {
  it('/metrics moves with runs: retries by type, a dead letter, the duration histogram, the DLQ gauge', async () => {
    await createSource(db.prisma, 'obs-retry', partner.url);
    await createSource(db.prisma, 'obs-dead', partner.url);
    partner.faults.add({ sourceId: 'obs-retry', kind: 'status', status: 503, times: 2 });
    partner.faults.add({ sourceId: 'obs-dead', kind: 'status', status: 422 });
    const before = await scrape();
    await worker.run(async () => {
      const ok = await startFetch(ctx, { sourceId: 'obs-retry', date: '2026-09-01', requestedBy: 'test' });
      const dead = await startFetch(ctx, { sourceId: 'obs-dead', date: '2026-09-01', requestedBy: 'test' });
      assert.equal((await ok.handle.result()).status, 'succeeded');
      await dead.handle.result().catch(() => undefined);
    });
    const s = sampler([worker.taskQueue]);
    await sleep(1_000);
    await s.stop();
    const m = await scrape();
    const delta = (key: string) => (m.get(key) ?? 0) - (before.get(key) ?? 0);
    assert.equal(
      delta('durable_fetch_activity_retries_total{activity="fetchPage",error_type="UpstreamUnavailable"}'),
      2,
    );
    assert.equal(delta('durable_fetch_runs_started_total{source="obs-retry",job_type="fetch-records"}'), 1);
    assert.equal(
      delta(
        'durable_fetch_runs_finished_total{source="obs-retry",job_type="fetch-records",status="succeeded",error_type=""}',
      ),
      1,
    );
    assert.equal(
      delta(
        'durable_fetch_runs_finished_total{source="obs-dead",job_type="fetch-records",status="dead_lettered",error_type="InvalidInput"}',
      ),
      1,
    );
    assert.equal(
      delta(
        'durable_fetch_run_duration_seconds_count{source="obs-retry",job_type="fetch-records",status="succeeded"}',
      ),
      1,
    );
    assert.ok(
      (m.get(
        'durable_fetch_run_duration_seconds_sum{source="obs-retry",job_type="fetch-records",status="succeeded"}',
      ) ?? 0) > 0,
    );
    assert.equal(delta('durable_fetch_downstream_requests_total{source="obs-retry",outcome="error"}'), 2);
    assert.equal(delta('durable_fetch_downstream_requests_total{source="obs-retry",outcome="ok"}'), 1);
    assert.ok(
      (m.get('durable_fetch_downstream_last_success_timestamp_seconds{source="obs-retry"}') ?? 0) > 0,
    );
    assert.equal(m.get('durable_fetch_dead_letters_open'), 1, 'the gauge counts the open dead letter');
    assert.equal(
      m.get('durable_fetch_outbox_pending'),
      await db.prisma.outboxEvent.count({ where: { status: 'pending' } }),
    );
  });

  it('run metrics carry the job type of the run: a dead-lettered exchange-rates run is counted under it', async () => {
    await createSource(db.prisma, 'obs-rates', partner.url, { jobType: 'exchange-rates' });
    const { fence } = await insertHeldRun(db.prisma, {
      jobType: 'exchange-rates',
      sourceId: 'obs-rates',
      date: '2026-09-02',
    });
    const before = await scrape();
    const finishRun = createFinishRun(testDeps(db.prisma, { metrics }));
    const done = await finishRun({
      ...fence,
      status: 'dead_lettered',
      errorType: 'InvalidInput',
    });
    assert.equal(done.finished, true);
    const m = await scrape();
    const delta = (key: string) => (m.get(key) ?? 0) - (before.get(key) ?? 0);
    const labels = 'source="obs-rates",job_type="exchange-rates",status="dead_lettered"';
    assert.equal(delta(`durable_fetch_runs_finished_total{${labels},error_type="InvalidInput"}`), 1);
    assert.equal(delta(`durable_fetch_run_duration_seconds_count{${labels}}`), 1);
    assert.ok(
      ![...m.keys()].some((k) => k.includes('source="obs-rates",job_type="fetch-records"')),
      'nothing of this source is counted under the other job',
    );
  });

  it('backlog: with no worker and jobs arriving, oldest age grows and status flags it; after workers return it falls', async () => {
    const taskQueue = `test-backlog-${randomUUID()}`;
    await createSource(db.prisma, 'obs-backlog', partner.url);
    const c = { ...ctx, taskQueue };
    const s = sampler([taskQueue]);
    const env = {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
    };
    const age = async () =>
      (await scrape()).get(
        `durable_fetch_task_queue_oldest_age_seconds{task_queue="${taskQueue}",type="workflow"}`,
      ) ?? 0;
    try {
      const handles = [];
      for (let day = 1; day <= 4; day++) {
        handles.push(
          (await startFetch(c, { sourceId: 'obs-backlog', date: `2026-09-0${day}`, requestedBy: 'test' }))
            .handle,
        );
        await sleep(1_500);
      }
      // Temporal serves task-queue stats from a short cache: wait (bounded) for a fresher figure.
      let a1 = 0;
      for (let i = 0; i < 40 && a1 === 0; i++) {
        a1 = await age();
        if (a1 === 0) await sleep(500);
      }
      let a2 = a1;
      for (let i = 0; i < 40 && a2 <= a1; i++) {
        await sleep(1_000);
        a2 = await age();
      }
      assert.ok(a2 > a1 && a1 > 0, `oldest age grows with nobody polling: ${a1} → ${a2}`);
      const risky = await runCli(['status', '--json', '--window', '20s', '--task-queue', taskQueue], env);
      assert.equal(risky.code, 0, risky.stderr);
      const flagged = JSON.parse(risky.stdout) as {
        queues: { type: string; backlog: number; verdict: { risk: boolean; reason: string } }[];
      };
      const wf = flagged.queues.find((q) => q.type === 'workflow');
      assert.ok(wf && wf.backlog >= 1 && wf.verdict.risk, JSON.stringify(wf));
      const check = await runCli(['status', '--check', '--window', '20s', '--task-queue', taskQueue], env);
      assert.equal(check.code, 1, 'status --check exits 1 on a backlog risk');
      assert.match(check.stdout, /backlog risk on/);

      // The workers come back: the backlog drains, the age falls, the risk goes.
      const back = spawnTs(['bin/durable-fetch.js', 'worker'], { ...env, LOG_LEVEL: 'warn' });
      try {
        const [, metricsUrl] = await back.waitFor(/metrics at (http:\S+)/, 60_000);
        await back.waitFor(/worker polling task queue/, 60_000);
        for (const h of handles) assert.equal((await h.result()).status, 'succeeded');
        // The worker process serves its own metrics and the Temporal SDK's on one endpoint.
        const served = await scrape(metricsUrl);
        assert.equal(
          served.get('durable_fetch_runs_started_total{source="obs-backlog",job_type="fetch-records"}'),
          4,
        );
        assert.ok(
          [...served.keys()].some((k) => k.startsWith('temporal_worker_task_slots_available')),
          'the SDK runtime metrics are appended',
        );
        // A few samples after the drain (the stats cache may lag a little).
        let left = await age();
        for (let i = 0; i < 60 && left > 0; i++) {
          await sleep(500);
          left = await age();
        }
        assert.equal(left, 0, 'nothing waits any more');
        const calm = await runCli(['status', '--json', '--window', '10s', '--task-queue', taskQueue], env);
        const after = JSON.parse(calm.stdout) as {
          queues: { type: string; backlog: number; verdict: { risk: boolean } }[];
        };
        assert.deepEqual(
          after.queues.map((q) => [q.type, q.backlog, q.verdict.risk]),
          [
            ['workflow', 0, false],
            ['activity', 0, false],
          ],
        );
      } finally {
        assert.equal(await back.stop('SIGTERM', 30_000), 0, back.output());
      }
    } finally {
      await s.stop();
    }
  });
});
