// R7, R12c; issue 35: our own database hanging instead of refusing — packets dropped, no reset,
// no refusal, as a network partition or a failover behind a stale address looks — for 20 s while
// 12 runs are mid-fetch in a real `durable-fetch worker` process, which reaches PostgreSQL through
// a proxy the test owns that stops forwarding (and holds what it was sent, as TCP would deliver it
// once the path heals). Connects and statements must time out and be retried as an outage, and
// every run must end succeeded once the database answers, with each record, event and key once.
// One run is taken over by another owner during the hang (its lease token replaced, as a
// new claim does): what the hung worker had in flight for it lands after the takeover and must
// change nothing of it — no lease extended, no page stored past its fence.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { makeRecord } from '../../partner/records.ts';
import { startPartner, type PartnerServer } from '../../partner/server.ts';
import { useTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { createSource } from '../helpers/deps.ts';
import { startRuns } from '../helpers/downstream-runs.ts';
import { waitFor } from '../helpers/outbox.ts';
import { startPgProxy, type PgProxy } from '../helpers/pg-proxy.ts';
import { spawnWorker, type Spawned, within } from '../helpers/process.ts';
import { temporalAddress, testClient } from '../helpers/temporal.ts';
import type { fetchRecordsWorkflow } from '../../workflows/fetch-records.ts';

const SOURCE = 'dbhang-src';
const RUNS = 12;
const RECORDS = 150;
const PAGE_SIZE = 50;
const PAGES = RECORDS / PAGE_SIZE;
const HANG_MS = 20_000;
const dates = Array.from({ length: RUNS }, (_, i) => `2026-05-${String(i + 1).padStart(2, '0')}`);
/** The run another owner takes over during the hang. */
const TAKEN = dates[0] as string;

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let proxy: PgProxy;
let worker: Spawned | undefined;

before(async () => {
  [db, partner, client] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => RECORDS }),
    testClient(),
  ]);
  const { port, hostname } = new URL(db.url);
  proxy = await startPgProxy({ host: hostname, port: Number(port) });
});
after(async () => {
  await worker?.stop('SIGKILL', 5_000);
  proxy?.resume();
  await proxy?.close();
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

/** Every layer of a failure: its class, type and message, outermost first. */
function causes(err: unknown): string {
  const layers: string[] = [];
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 6; depth++) {
    const type = (e as { type?: unknown }).type;
    layers.push(`${e.name}${typeof type === 'string' ? ` ${type}` : ''}: ${e.message}`);
    e = e.cause;
  }
  return layers.join(' <- ');
}

interface Outcome {
  status: string;
  records: number;
  error: string;
}

const outcomeOf = (h: WorkflowHandle<typeof fetchRecordsWorkflow>): Promise<Outcome> =>
  h.result().then(
    (r) => ({ status: r.status, records: r.status === 'succeeded' ? r.records : 0, error: '' }),
    (err: unknown) => ({ status: 'failed', records: 0, error: causes(err) }),
  );

describe('database hang', () => {
  it(
    'a database that stops answering for 20 s mid-run: every run ends succeeded, and a run taken over meanwhile keeps its new owner',
    { timeout: 400_000 },
    async (t) => {
      await createSource(db.prisma, SOURCE, partner.url, { pageSize: PAGE_SIZE });
      partner.faults.add({ sourceId: SOURCE, kind: 'delay', delayMs: 2_000, times: 1_000 });
      const taskQueue = `test-dbhang-${randomUUID()}`;
      worker = spawnWorker({
        DATABASE_URL: proxy.via(db.url),
        TEMPORAL_ADDRESS: temporalAddress(),
        DURABLE_FETCH_TASK_QUEUE: taskQueue,
        PARTNER_PAGE_LIMIT: String(PAGE_SIZE),
        LOG_LEVEL: 'warn',
      });
      await worker.waitFor(/worker polling task queue/, 60_000);
      const handles = (await startRuns({ client, db, taskQueue }, SOURCE, dates)).map((s) => s.handle);
      await waitFor(
        async () =>
          (await db.prisma.fetchRun.count({ where: { sourceId: SOURCE, status: 'running' } })) === RUNS,
        'every run claimed and running',
        60_000,
      );

      proxy.hang();
      const hungAt = Date.now();
      // Another owner takes the run over (directly: the test's own connection is not behind the proxy).
      const newToken = randomUUID();
      await sleep(2_000);
      await db.prisma.$executeRaw`
        UPDATE fetch_run SET lease_token = ${newToken}::uuid, lease_until = now() + interval '1 hour', attempt = attempt + 1
         WHERE source_id = ${SOURCE} AND business_date = ${TAKEN}::date`;
      const taken = await db.prisma.fetchRun.findFirstOrThrow({
        where: { sourceId: SOURCE, businessDate: new Date(`${TAKEN}T00:00:00Z`) },
      });
      await sleep(HANG_MS - (Date.now() - hungAt));
      proxy.resume();
      const back = Date.now();

      let settledAt = back;
      const outcomes = await within(
        Promise.all(
          handles.map(async (h) => {
            const o = await outcomeOf(h);
            settledAt = Math.max(settledAt, Date.now());
            return o;
          }),
        ),
        240_000,
        () => `every run's result:\n${worker?.output() ?? ''}`,
      );
      // The hang reached the runs as an outage: attempts failed with DatabaseUnavailable (a connect
      // or a statement timing out), none as a bug.
      const failed = [...(worker?.output() ?? '').matchAll(/"error":\{"type":"(\w+)"/g)].map((m) => m[1]);
      const byType: Record<string, number> = {};
      for (const type of failed) if (type) byType[type] = (byType[type] ?? 0) + 1;
      t.diagnostic(`attempts failed during and after the hang: ${JSON.stringify(byType)}`);
      assert.ok((byType.DatabaseUnavailable ?? 0) > 0, 'attempts failed as DatabaseUnavailable');
      assert.equal(byType.Internal, undefined, 'no attempt failed as a bug');
      t.diagnostic(
        `every run settled ${((settledAt - back) / 1000).toFixed(1)} s after the database answered again`,
      );

      // The taken-over run: its workflow lost the lease, and its row is as the new owner left it.
      const [takenOutcome, ...rest] = outcomes;
      assert.match(
        takenOutcome?.error ?? '',
        /LeaseLost/,
        `the old owner stops: its lease is lost (${takenOutcome?.error})`,
      );
      const after = await db.prisma.fetchRun.findFirstOrThrow({ where: { id: taken.id } });
      assert.deepEqual(
        [after.leaseToken, after.leaseUntil?.getTime(), after.pagesStored, after.recordsStored],
        [newToken, taken.leaseUntil?.getTime(), taken.pagesStored, taken.recordsStored],
        'nothing of the old owner landed after the takeover',
      );

      assert.deepEqual(
        rest.map((o) => [o.status, o.records]),
        dates.slice(1).map(() => ['succeeded', RECORDS]),
        rest.map((o) => o.error).join('\n'),
      );
      const runs = await db.prisma.fetchRun.findMany({ where: { sourceId: SOURCE, id: { not: taken.id } } });
      assert.deepEqual(
        runs.map((r) => [r.status, r.pagesStored, r.recordsStored]),
        runs.map(() => ['succeeded', PAGES, RECORDS]),
      );
      assert.equal(
        await db.prisma.deadLetter.count({ where: { fetchRunId: { not: taken.id } } }),
        0,
        'no dead letter',
      );
      const stored = await db.prisma.fetchedRecord.findMany({
        where: { sourceId: SOURCE, businessDate: { not: new Date(`${TAKEN}T00:00:00Z`) } },
        select: { externalId: true },
      });
      const held = dates
        .slice(1)
        .flatMap((date) => Array.from({ length: RECORDS }, (_, i) => makeRecord(SOURCE, date, i + 1).id));
      assert.deepEqual(
        stored.map((r) => r.externalId).sort(),
        held.sort(),
        "each record of the partner's list once",
      );
      for (const run of runs) {
        assert.equal(
          await db.prisma.outboxEvent.count({ where: { aggregateId: run.id } }),
          PAGES + 1,
          `events of ${run.businessDate.toISOString().slice(0, 10)}`,
        );
      }
    },
  );
});
