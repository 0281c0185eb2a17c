// An isolated downstream's task queue (R8: `<task queue>-ds-<downstream>`) where operators watch
// backlogs (issue 37): `durable-fetch status` (text and JSON) and the sampler's backlog and
// oldest-age gauges list it beside the deployment's own queue, with the queue as the `task_queue`
// label. The queues are read from the downstreams in the database on every sample, so a downstream
// made isolated while the process runs is sampled from then on, and one no longer isolated loses
// its series. A run of an isolated downstream's source waits on that queue: the test worker polls
// the workflow queue only, no poller serves the downstream's. Shared Temporal dev server, a cloned
// database. Source and downstream ids start with `sfq-`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { pino } from 'pino';
import { startSampler } from '../client/health.ts';
import { startFetch } from '../client/start-fetch.ts';
import { createMetrics, startMetricsServer, type MetricsServer } from '../runtime/metrics/metrics.ts';
import { detail } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource, testDeps } from './helpers/deps.ts';
import { createDownstream, pageFetches } from './helpers/downstream-runs.ts';
import { scrapeMetrics } from './helpers/metrics.ts';
import { temporalAddress, testClient, testWorker, type TestWorker } from './helpers/temporal.ts';

let db: TestDatabase;
let client: Client;
let worker: TestWorker;
let server: MetricsServer;
const metrics = createMetrics();

before(async () => {
  db = await useTestDatabase();
  client = await testClient();
  worker = await testWorker(testDeps(db.prisma));
  server = await startMetricsServer(metrics, { host: '127.0.0.1', port: 0 });
});

after(async () => {
  await server?.close();
  await client?.connection.close();
  await db?.drop();
});

interface QueueJson {
  taskQueue: string;
  type: string;
  backlog: number;
  oldestAgeSeconds: number;
  downstream?: string;
}

/** Polls `read` until `done` says yes, for at most `tries` × 500 ms; returns the last value read. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, tries = 60): Promise<T> {
  let value = await read();
  for (let i = 0; i < tries && !done(value); i++) {
    await sleep(500);
    value = await read();
  }
  return value;
}

describe('isolated downstream queues in status and the backlog gauges', { timeout: 120_000 }, () => {
  it("a run waiting on an isolated downstream's queue shows there, labelled with its queue; one series per queue; gone once not isolated", async () => {
    const env = {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: worker.taskQueue,
    };
    // The sampler starts before the downstream exists: it must find it on a later sample.
    const sampler = startSampler({
      prisma: db.prisma,
      temporal: () => Promise.resolve(client),
      namespace: 'default',
      taskQueues: [worker.taskQueue],
      isolatedQueuesOf: worker.taskQueue,
      metrics,
      intervalMs: 300,
      log: pino({ level: 'silent' }),
    });
    const queue = `${worker.taskQueue}-ds-sfq-slow`;
    const workflowId = 'fetch/fetch-records/sfq-a/2026-07-01';
    const series = async (gauge: string) =>
      [...(await scrapeMetrics(server.url))].filter(
        ([k]) => k.startsWith(`${gauge}{`) && k.includes(`task_queue="${queue}"`),
      );
    try {
      await sleep(700);
      await createDownstream(db.prisma, { id: 'sfq-slow', isolated: true, maxConcurrentCalls: 1 });
      // Nothing listens at the partner's address: no call is made, nothing polls the queue.
      await createSource(db.prisma, 'sfq-a', 'http://127.0.0.1:9', { downstream: 'sfq-slow' });
      await worker.run(async () => {
        await startFetch(
          { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue },
          { sourceId: 'sfq-a', date: '2026-07-01', requestedBy: 'test' },
        );
        const fetches = await until(
          () => pageFetches(client, workflowId),
          (f) => f.length > 0,
        );
        assert.deepEqual(
          fetches.map((f) => f.taskQueue),
          [queue],
          "the page fetch waits on the downstream's queue",
        );
      });

      // Temporal serves task-queue stats from a short cache: wait (bounded) for the figure.
      const backlog = await until(
        () => series('durable_fetch_task_queue_backlog'),
        (s) => s.some(([, v]) => v >= 1),
      );
      assert.deepEqual(
        backlog,
        [[`durable_fetch_task_queue_backlog{task_queue="${queue}",type="activity"}`, 1]],
        'one series for the queue (its activity tasks), with its backlog',
      );
      const age = await series('durable_fetch_task_queue_oldest_age_seconds');
      assert.deepEqual(
        age.map(([k]) => k),
        [`durable_fetch_task_queue_oldest_age_seconds{task_queue="${queue}",type="activity"}`],
      );
      assert.ok((age[0]?.[1] ?? 0) > 0, `the oldest task has an age: ${JSON.stringify(age)}`);

      const status = async () => {
        const r = await runCliInProcess(['status', '--json'], env);
        assert.equal(r.code, 0, detail(r));
        return (JSON.parse(r.stdout) as { queues: QueueJson[] }).queues;
      };
      const queues = await until(status, (qs) => qs.some((q) => q.taskQueue === queue && q.backlog >= 1));
      assert.deepEqual(
        queues.map((q) => [q.taskQueue, q.type, q.downstream ?? null]),
        [
          [worker.taskQueue, 'workflow', null],
          [worker.taskQueue, 'activity', null],
          [queue, 'activity', 'sfq-slow'],
        ],
      );
      assert.equal(queues[2]?.backlog, 1, JSON.stringify(queues[2]));
      const text = await runCliInProcess(['status'], env);
      assert.equal(text.code, 0, detail(text));
      assert.match(text.stdout, new RegExp(`^${queue}\\s+activity\\s+1\\s`, 'm'));

      // No longer isolated: its queue is not watched any more, and its series go.
      await db.prisma.downstream.update({ where: { id: 'sfq-slow' }, data: { isolated: false } });
      const gone = await until(
        () => series('durable_fetch_task_queue_backlog'),
        (s) => s.length === 0,
        20,
      );
      assert.deepEqual(gone, []);
      assert.deepEqual(await series('durable_fetch_task_queue_oldest_age_seconds'), []);
      assert.ok(!(await status()).some((q) => q.taskQueue === queue));
    } finally {
      await sampler.stop();
      await client.workflow
        .getHandle(workflowId)
        .terminate('test over')
        .catch(() => undefined);
    }
  });
});
