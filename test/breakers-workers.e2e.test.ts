// R8: an operator's `breakers open` / `breakers close` takes effect on every worker. Two real
// `durable-fetch worker` processes on one task queue run four runs of a source whose downstream
// has its own breaker; the CLI forces the breaker open mid-run, then closes it. The partner's
// ledger is the judge: once open, neither worker calls the partner (the request count stops,
// beyond the calls already out when it opened) and the runs wait (retry_wait, CircuitOpen);
// each worker's own metrics show it refused calls and that its sampler reads the shared state.
// Once closed, the runs complete with every record once. Ids start with `bkw-`.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import { downstreamSettingsSchema, rowOf } from '../db/ledger/downstreams.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { ok } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { scrapeMetrics } from './helpers/metrics.ts';
import { metricsUrlOf, spawnWorker, type Spawned } from './helpers/process.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';
import { until } from './helpers/terminate-kit.ts';

const SOURCE = 'bkw-src';
const DOWNSTREAM = 'bkw-partner';
const DATES = ['2026-10-11', '2026-10-12', '2026-10-13', '2026-10-14'];
/** 40 partner requests of 50 records per run, each held 200 ms: the runs are mid-way when it opens. */
const RECORDS = 2_000;
/**
 * A refused attempt retries after the open time: 4 s, so the 10 attempts of the source's retry
 * preset outlast the forced-open phase below with room to spare.
 */
const OPEN_MS = 4_000;
/** Generous bound on anything waiting for the workers (start-up, a retry, a sample). */
const WAIT_MS = 60_000;

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let env: Record<string, string>;
let taskQueue: string;
const workers: { process: Spawned; metricsUrl: string }[] = [];

before(async () => {
  [db, partner, client] = await Promise.all([
    useTestDatabase(),
    startPartner({ port: 0, recordCount: () => RECORDS }),
    testClient(),
  ]);
  taskQueue = `test-bkw-${randomUUID()}`;
  env = { DATABASE_URL: db.url, TEMPORAL_ADDRESS: temporalAddress(), DURABLE_FETCH_TASK_QUEUE: taskQueue };
  // The breaker opens only when an operator says so (its failure threshold is out of reach).
  const settings = downstreamSettingsSchema.parse({
    id: DOWNSTREAM,
    breaker: { minCalls: 100_000, openMs: OPEN_MS },
  });
  await db.prisma.downstream.create({ data: { id: DOWNSTREAM, ...rowOf(settings) } });
  await createSource(db.prisma, SOURCE, partner.url, { downstream: DOWNSTREAM });
  const spawned = [1, 2].map(() =>
    spawnWorker({
      ...env,
      PARTNER_PAGE_LIMIT: '50',
      DURABLE_FETCH_METRICS_SAMPLE_MS: '500',
      DURABLE_FETCH_CLEANUP_INTERVAL_MS: '0',
      LOG_LEVEL: 'warn',
    }),
  );
  for (const p of spawned) {
    const metricsUrl = await metricsUrlOf(p);
    await p.waitFor(/worker polling task queue/, WAIT_MS);
    workers.push({ process: p, metricsUrl });
  }
});
after(async () => {
  await Promise.all(workers.map((w) => w.process.stop('SIGKILL', 5_000)));
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

/** The sum of a worker's series of `name` whose labels include every one of `labels`. */
async function metricOf(url: string, name: string, labels: string[]): Promise<number> {
  let sum = 0;
  for (const [key, value] of await scrapeMetrics(url)) {
    if (key.startsWith(`${name}{`) && labels.every((l) => key.includes(l))) sum += value;
  }
  return sum;
}

/** Waits until every worker's `name{labels}` reaches `atLeast`; returns each one's value. */
function onEveryWorker(name: string, labels: string[], atLeast: number): Promise<number[]> {
  return until(
    async () => {
      const values = await Promise.all(workers.map((w) => metricOf(w.metricsUrl, name, labels)));
      return values.every((v) => v >= atLeast) ? values : undefined;
    },
    () => `${name}{${labels.join(',')}} >= ${atLeast} on both workers`,
    WAIT_MS,
  );
}

const requests = () => partner.ledger.count({ sourceId: SOURCE });
const runs = () =>
  db.prisma.fetchRun.findMany({ where: { sourceId: SOURCE }, orderBy: { businessDate: 'asc' } });

describe('breakers on every worker (R8)', () => {
  it('breakers: a forced open stops both workers calling the partner and the runs wait (CircuitOpen); a close lets them complete', async () => {
    partner.faults.add({ sourceId: SOURCE, kind: 'delay', delayMs: 200, times: 100_000 });
    const ctx = {
      temporal: client,
      prisma: db.prisma,
      taskQueue,
      now: () => new Date('2026-11-29T12:00:00Z'),
    };
    const handles = await Promise.all(
      DATES.map(
        async (date) => (await startFetch(ctx, { sourceId: SOURCE, date, requestedBy: 'test' })).handle,
      ),
    );
    // Both workers call the partner before the breaker opens.
    const okCalls = [
      'durable_fetch_downstream_requests_total',
      [`source="${SOURCE}"`, 'outcome="ok"'],
    ] as const;
    await onEveryWorker(okCalls[0], [...okCalls[1]], 1);

    ok(
      await runCliInProcess(
        ['breakers', 'open', DOWNSTREAM, '--reason', 'drill: partner down', '--by', 'ops'],
        env,
      ),
    );
    const atOpen = requests();
    const finished = (await runs()).filter((r) => r.status === 'succeeded');
    assert.deepEqual(finished, [], 'every run was still fetching when the breaker opened');

    // Every worker's next partner call is refused (each read the breaker row), and its sampler
    // reports the shared state.
    const refused = [
      'durable_fetch_breaker_refused_calls_total',
      [`downstream="${DOWNSTREAM}"`, 'reason="forced_open"'],
    ] as const;
    const firstRefusals = await onEveryWorker(refused[0], [...refused[1]], 1);
    await onEveryWorker(
      'durable_fetch_breaker_state',
      [`downstream="${DOWNSTREAM}"`, 'state="open"', 'forced="true"'],
      1,
    );
    const afterRefusals = requests();
    // Calls already out when it opened may still land: at most one per run's fetching activity.
    assert.ok(afterRefusals - atOpen <= DATES.length, `${afterRefusals - atOpen} calls after the open`);

    // The runs wait for the breaker: each in retry_wait with CircuitOpen, none given up.
    const waiting = await until(
      async () => {
        const rows = await runs();
        const all = rows.length === DATES.length;
        return all && rows.every((r) => r.status === 'retry_wait' && r.errorClass === 'CircuitOpen')
          ? rows
          : undefined;
      },
      () => 'every run to wait in retry_wait with CircuitOpen',
      WAIT_MS,
    );
    assert.match(
      waiting[0]?.errorMessage ?? '',
      /not called, an operator opened its circuit breaker \(downstream bkw-partner\)/,
    );
    // More refused attempts on both workers, and still no call reached the partner.
    await onEveryWorker(refused[0], [...refused[1]], Math.max(...firstRefusals) + 1);
    assert.equal(requests(), afterRefusals, 'no partner call while the breaker is forced open');

    ok(
      await runCliInProcess(['breakers', 'close', DOWNSTREAM, '--reason', 'drill over', '--by', 'ops'], env),
    );
    const results = await Promise.all(handles.map((h) => h.result()));
    assert.deepEqual(
      results.map((r) => r.status),
      DATES.map(() => 'succeeded'),
    );
    await onEveryWorker(
      'durable_fetch_breaker_state',
      [`downstream="${DOWNSTREAM}"`, 'state="closed"', 'forced="false"'],
      1,
    );
    const done = await runs();
    assert.deepEqual(
      done.map((r) => [r.status, r.recordsStored]),
      DATES.map(() => ['succeeded', RECORDS]),
    );
    assert.equal(
      await db.prisma.fetchedRecord.count({ where: { sourceId: SOURCE } }),
      RECORDS * DATES.length,
    );
    assert.ok(requests() > afterRefusals, 'the partner is called again once it is closed');
    const refusedBy = await Promise.all(
      workers.map((w) => metricOf(w.metricsUrl, refused[0], [...refused[1]])),
    );
    console.log(
      `partner requests: ${atOpen} at the open, ${afterRefusals} while forced open, ${requests()} in all; ` +
        `calls refused per worker: ${refusedBy.join(', ')}`,
    );
    const audit = await db.prisma.auditEntry.findMany({
      where: { targetType: 'breaker', targetId: DOWNSTREAM },
      orderBy: { at: 'asc' },
    });
    assert.deepEqual(
      audit.map((a) => [a.action, a.actor]),
      [
        ['breaker.open', 'ops'],
        ['breaker.close', 'ops'],
      ],
    );
  });
});
