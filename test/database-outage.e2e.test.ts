// Our own database refusing connections mid-run (R7, R12c), as a managed failover or a maintenance
// window looks to a client: runs in flight in a real `durable-fetch worker` process, then
// `ALLOW_CONNECTIONS false` plus every session ended, for 20 s, then open again. Every run must
// end succeeded with each record, event and idempotency key once — nothing lost, nothing twice.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import { makeRecord } from '../partner/records.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { pageKeyFor } from '../contract/business-key.ts';
import { refuseConnections, useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { metricsUrlOf, spawnWorker, type Spawned, within } from './helpers/process.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const SOURCE = 'dbout-src';
const RUNS = 12;
const RECORDS = 150;
const PAGE_SIZE = 50;
const PAGES = RECORDS / PAGE_SIZE;
/** As long as the reproduction's outage: longer than any one activity's own retries cover. */
const OUTAGE_MS = 20_000;
const dates = Array.from({ length: RUNS }, (_, i) => `2026-03-${String(i + 1).padStart(2, '0')}`);

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: Spawned | undefined;

before(async () => {
  [db, partner, client] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => RECORDS }),
    testClient(),
  ]);
});
after(async () => {
  await worker?.stop('SIGKILL', 5_000);
  await client?.connection.close();
  await partner?.close();
  await refuseConnections(db.name, false).catch(() => undefined);
  await db?.drop();
});

describe('database outage', () => {
  it(
    'a database refusing connections for 20 s mid-run: every run ends succeeded, nothing lost or stored twice',
    { timeout: 300_000 },
    async (t) => {
      await createSource(db.prisma, SOURCE, partner.url, { pageSize: PAGE_SIZE });
      // Every partner page takes 2 s, so that the outage finds every run mid-way.
      partner.faults.add({ sourceId: SOURCE, kind: 'delay', delayMs: 2_000, times: 1_000 });
      const taskQueue = `test-dbout-${randomUUID()}`;
      worker = spawnWorker({
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: temporalAddress(),
        DURABLE_FETCH_TASK_QUEUE: taskQueue,
        PARTNER_PAGE_LIMIT: String(PAGE_SIZE),
        LOG_LEVEL: 'warn',
      });
      const metrics = await metricsUrlOf(worker);
      await worker.waitFor(/worker polling task queue/, 60_000);
      const ctx = {
        temporal: client,
        prisma: db.prisma,
        taskQueue,
        now: () => new Date('2026-11-29T12:00:00Z'),
      };
      const handles = await Promise.all(
        dates.map(
          async (date) => (await startFetch(ctx, { sourceId: SOURCE, date, requestedBy: 'test' })).handle,
        ),
      );
      await waitFor(
        async () =>
          (await db.prisma.fetchRun.count({ where: { sourceId: SOURCE, status: 'running' } })) === RUNS,
        'every run claimed and running',
        60_000,
      );

      await refuseConnections(db.name, true);
      const outageEnds = Date.now() + OUTAGE_MS;
      // Sessions that slip in before the refusal took effect are ended too, for the whole outage.
      while (Date.now() < outageEnds) {
        await sleep(1_000);
        await refuseConnections(db.name, true);
      }
      await refuseConnections(db.name, false);
      const back = Date.now();
      let settledAt = back;
      const results = await within(
        Promise.all(
          handles.map(async (h) => {
            const result = await h.result();
            settledAt = Math.max(settledAt, Date.now());
            return result;
          }),
        ),
        240_000,
        () => `every run's result:\n${worker?.output() ?? ''}`,
      );
      t.diagnostic(
        `every run settled ${((settledAt - back) / 1000).toFixed(1)} s after the database answered again`,
      );
      assert.deepEqual(
        results.map((r) => [r.status, r.status === 'succeeded' ? r.records : 0]),
        dates.map(() => ['succeeded', RECORDS]),
      );

      // The outage reached the runs: their activities failed with DatabaseUnavailable and were retried.
      const scraped = await (await fetch(metrics)).text();
      const retried = [
        ...scraped.matchAll(
          /durable_fetch_activity_retries_total\{[^}]*error_type="DatabaseUnavailable"[^}]*\} (\d+)/g,
        ),
      ]
        .map((m) => Number(m[1]))
        .reduce((a, b) => a + b, 0);
      assert.ok(retried > 0, 'activities were retried as DatabaseUnavailable');
      t.diagnostic(`${retried} activity attempts failed with DatabaseUnavailable and were retried`);

      const runs = await db.prisma.fetchRun.findMany({ where: { sourceId: SOURCE } });
      assert.deepEqual(
        runs.map((r) => [r.status, r.pagesStored, r.recordsStored]),
        dates.map(() => ['succeeded', PAGES, RECORDS]),
      );
      assert.equal(await db.prisma.deadLetter.count(), 0, 'no dead letter');
      assert.equal(await db.prisma.fetchedPage.count(), 0, 'no staged page left behind');
      // Each record once (its id is per source and date), each page event and key once.
      const stored = await db.prisma.fetchedRecord.findMany({
        where: { sourceId: SOURCE },
        select: { externalId: true },
      });
      const expected = dates.flatMap((date) =>
        Array.from({ length: RECORDS }, (_, i) => makeRecord(SOURCE, date, i + 1).id),
      );
      assert.deepEqual(stored.map((r) => r.externalId).sort(), expected.sort());
      const events = await db.prisma.outboxEvent.findMany({ select: { topic: true, aggregateId: true } });
      assert.equal(events.length, RUNS * (PAGES + 1));
      for (const run of runs) {
        assert.equal(events.filter((e) => e.aggregateId === run.id).length, PAGES + 1, `events of ${run.id}`);
      }
      const keys = await db.prisma.idempotencyRecord.findMany({ select: { key: true } });
      const pageKeys = dates.flatMap((date) =>
        Array.from({ length: PAGES }, (_, n) =>
          pageKeyFor({ jobType: 'fetch-records', sourceId: SOURCE, businessDate: date }, n),
        ),
      );
      assert.deepEqual(keys.map((k) => k.key).sort(), pageKeys.sort());
    },
  );
});
