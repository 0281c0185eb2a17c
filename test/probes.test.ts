// The liveness and readiness probes of the metrics port (deploy/k8s/, docs/operations.md) on real
// `durable-fetch worker` and `durable-fetch publisher` processes: /readyz answers 503 until the
// worker polls its task queue (held before that by a lock on the source table its start reads),
// 200 once it does (Temporal then lists its poller), and 503 again from SIGTERM on while it lets an
// activity finish; /livez answers 200 throughout. The publisher is ready while it claims, and no
// longer once SIGTERM stops its claims while a delivery is still held.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import pg from 'pg';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { PROBE_PATHS } from '../runtime/metrics/metrics.ts';
import { freePort } from '../runtime/process-utils.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { insertEvents, testPublisher, waitFor } from './helpers/outbox.ts';
import { type Spawned, spawnTs } from './helpers/process.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const SOURCE = 'probes';
/** Longer than the test: only the test's SIGKILL ends a held request or the grace time. */
const HOLD_MS = 120_000;

/** The status a probe path answers on `port`; 0 when nothing answers within 2 s. */
async function probe(port: number, path: string): Promise<number> {
  return fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2_000) })
    .then((r) => r.status)
    .catch(() => 0);
}

/** Fails at once when `process` has exited: a probe of a dead process would only time out. */
function assertAlive(process: Spawned, what: string): void {
  assert.ok(
    process.child.exitCode === null && process.child.signalCode === null,
    `${what}:\n${process.output()}`,
  );
}

let db: TestDatabase;
let client: Client;
const spawned: Spawned[] = [];

before(async () => {
  [db, client] = await Promise.all([useTestDatabase(), testClient()]);
});
after(async () => {
  for (const p of spawned) await p.stop('SIGKILL', 5_000);
  await client?.connection.close();
  await db?.drop();
});

void describe('worker probes', () => {
  let partner: PartnerServer;
  before(async () => {
    partner = await startPartner({ port: 0, recordCount: () => 10 });
  });
  after(async () => {
    await partner?.close();
  });

  it('worker: /readyz 503 before it polls, 200 once it polls, 503 from SIGTERM on; /livez 200 throughout', async () => {
    const port = await freePort();
    const taskQueue = `test-probes-${randomUUID()}`;
    // Page fetches as activities, so that SIGTERM leaves one running (a local fetch: local-stop.test.ts).
    await createSource(db.prisma, SOURCE, partner.url, { localFetch: false });

    // The worker reads the sources (the jobs it does not run) after its metrics port opens and
    // before it builds its Temporal worker: holding the table holds it there.
    const lock = new pg.Client({ connectionString: db.url });
    await lock.connect();
    await lock.query('BEGIN');
    await lock.query('LOCK TABLE durable_fetch.source IN ACCESS EXCLUSIVE MODE');
    let locked = true;
    try {
      const worker = spawnTs(['bin/durable-fetch.js', 'worker'], {
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: temporalAddress(),
        DURABLE_FETCH_TASK_QUEUE: taskQueue,
        DURABLE_FETCH_METRICS_PORT: String(port),
        DURABLE_FETCH_SHUTDOWN_GRACE_MS: String(HOLD_MS),
        HTTP_RESPONSE_TIMEOUT_MS: String(HOLD_MS),
        LOG_LEVEL: 'warn',
      });
      spawned.push(worker);
      await waitFor(
        async () => {
          assertAlive(worker, 'the worker exited while starting');
          return (await probe(port, PROBE_PATHS.readiness)) !== 0;
        },
        'the metrics port to answer',
        60_000,
      );
      // Its start waits on the lock (a session of its database waits for a lock on `source`). Asked
      // from another session than the lock's: a transaction reads pg_stat_activity once, at its first
      // read, and would never see a wait that began after it. The wait lasts at most the worker's
      // lock_timeout (5 s, db/limits.ts), within which the two probes below answer.
      await waitFor(
        async () => {
          assertAlive(worker, 'the worker exited before it read the sources');
          const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%"source"%'`;
          return (row?.n ?? 0) > 0;
        },
        'the worker to wait for the source table',
        10_000,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; the worker's output:\n${worker.output()}`);
      });
      const [readiness, liveness] = await Promise.all([
        probe(port, PROBE_PATHS.readiness),
        probe(port, PROBE_PATHS.liveness),
      ]);
      assert.equal(readiness, 503, 'not polling yet: not ready');
      assert.equal(liveness, 200, 'starting is alive');
      await lock.query('ROLLBACK');
      locked = false;

      await waitFor(
        async () => {
          assertAlive(worker, 'the worker exited');
          return (await probe(port, PROBE_PATHS.readiness)) === 200;
        },
        '/readyz 200',
        60_000,
      );
      // Ready means polling: the worker's polls reach Temporal as it starts to run.
      await waitFor(
        async () =>
          (
            await client.workflowService.describeTaskQueue({
              namespace: 'default',
              taskQueue: { name: taskQueue },
              taskQueueType: 1, // workflow
            })
          ).pollers.length > 0,
        `a poller on ${taskQueue}`,
        10_000,
      );

      // A run whose first partner request the partner holds: the stop has an activity to wait for.
      partner.faults.add({ sourceId: SOURCE, kind: 'delay', delayMs: HOLD_MS });
      await startFetch(
        { temporal: client, prisma: db.prisma, taskQueue, now: () => new Date('2026-11-29T12:00:00Z') },
        { sourceId: SOURCE, date: '2026-11-28', requestedBy: 'test' },
      );
      await waitFor(() => partner.faults.list().length === 0, 'the partner to hold a request', 60_000);
      worker.child.kill('SIGTERM');
      await worker.waitFor(/worker stopping \(SIGTERM\)/, 10_000);
      assertAlive(worker, 'the worker exited during its grace time');
      assert.equal(await probe(port, PROBE_PATHS.readiness), 503, 'stopping: not ready');
      assert.equal(await probe(port, PROBE_PATHS.liveness), 200, 'stopping is alive');
      assertAlive(worker, 'the worker exited during its grace time');
    } finally {
      if (locked) await lock.query('ROLLBACK').catch(() => undefined);
      await lock.end();
    }
  });
});

void describe('publisher probes', () => {
  let webhook: Server;
  let webhookUrl: string;
  let held = 0;
  before(async () => {
    // Receives deliveries and answers none of them: the publisher's stop has one to wait for.
    webhook = createServer(() => void held++);
    await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
    const address = webhook.address();
    webhookUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/events`;
  });
  after(async () => {
    webhook?.closeAllConnections();
    await new Promise((resolve) => webhook?.close(resolve));
  });

  it('Publisher.claiming: only between start() and stop()', async () => {
    // A database of its own: this publisher has no sink, and must claim no other test's events.
    const own = await useTestDatabase();
    try {
      const publisher = testPublisher(own.prisma, {});
      assert.equal(publisher.claiming, false, 'before start()');
      publisher.start();
      assert.equal(publisher.claiming, true, 'started');
      const stopped = publisher.stop(1_000);
      assert.equal(publisher.claiming, false, 'once stop() is called');
      await stopped;
    } finally {
      await own.drop();
    }
  });

  it('publisher: /readyz 200 while it claims, 503 from SIGTERM on while a delivery is held; /livez 200 throughout', async () => {
    const port = await freePort();
    const publisher = spawnTs(['bin/durable-fetch.js', 'publisher'], {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_METRICS_PORT: String(port),
      DURABLE_FETCH_OUTBOX_ROUTES: '*=webhook',
      DURABLE_FETCH_WEBHOOK_URL: webhookUrl,
      DURABLE_FETCH_OUTBOX_GRACE_MS: String(HOLD_MS),
      HTTP_RESPONSE_TIMEOUT_MS: String(HOLD_MS),
      LOG_LEVEL: 'warn',
    });
    spawned.push(publisher);
    await publisher.waitFor(/publisher running/, 60_000);
    assert.equal(await probe(port, PROBE_PATHS.readiness), 200, 'claiming: ready');
    assert.equal(await probe(port, PROBE_PATHS.liveness), 200);

    await insertEvents(db.prisma, { aggregates: [`probes-${randomUUID()}`], perAggregate: 1 });
    await waitFor(() => held > 0, 'the webhook to hold a delivery', 30_000);
    publisher.child.kill('SIGTERM');
    await publisher.waitFor(/publisher stopping/, 10_000);
    assertAlive(publisher, 'the publisher exited during its grace time');
    assert.equal(await probe(port, PROBE_PATHS.readiness), 503, 'stopping: not ready');
    assert.equal(await probe(port, PROBE_PATHS.liveness), 200, 'stopping is alive');
    assertAlive(publisher, 'the publisher exited during its grace time');
  });
});
