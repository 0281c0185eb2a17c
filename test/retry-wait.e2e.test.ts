// R1's retry-wait state end to end: a real `durable-fetch worker` child process, the shared
// Temporal dev server, a cloned database and the demo partner over real sockets. The partner
// answers a run's first page request with 429 and `Retry-After`; while the step waits for its next
// attempt the run's row must say `retry_wait` (with `next_run_at` and the error class), the CLI
// and the metrics must show it, the run must stay owned (a second workflow for the key is a
// duplicate) and the stuck-run sweep must treat it as live; then `running` again, then `succeeded`.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import type { FetchRun } from '../prisma/generated/client.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import type { FetchRecordsResult } from '../contract/types.ts';
import { type CliResult, detail } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { scrapeMetrics } from './helpers/metrics.ts';
import { metricsUrlOf, spawnWorker, type Spawned } from './helpers/process.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const DATE = '2026-09-03';
/**
 * Leases run out 2 s after their last renewal: far shorter than the waits below, so a run in
 * retry_wait keeps its claim only because the wait itself extends its lease.
 */
const LEASE_TTL_MS = 2_000;
const RATE_LIMITED_GAUGE = 'durable_fetch_runs_retry_wait{error_class="RateLimited"}';
/** Generous bound on anything that waits for a worker, a retry or the sweep. */
const WAIT_MS = 90_000;

let db: TestDatabase;
let partner: PartnerServer;
let client: Client;
let worker: Spawned;
let metricsUrl: string;
let env: Record<string, string>;
let taskQueue: string;

before(async () => {
  db = await useTestDatabase();
  partner = await startPartner({ port: 0, recordCount: () => 30 });
  client = await testClient();
  taskQueue = `test-retry-wait-${randomUUID()}`;
  env = { DATABASE_URL: db.url, TEMPORAL_ADDRESS: temporalAddress(), DURABLE_FETCH_TASK_QUEUE: taskQueue };
  worker = spawnWorker({
    ...env,
    DURABLE_FETCH_LEASE_TTL_MS: String(LEASE_TTL_MS),
    DURABLE_FETCH_SWEEP_INTERVAL_MS: '1000',
    DURABLE_FETCH_METRICS_SAMPLE_MS: '500',
    DURABLE_FETCH_CLEANUP_INTERVAL_MS: '0',
    DURABLE_FETCH_SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'warn',
  });
  metricsUrl = await metricsUrlOf(worker);
  await worker.waitFor(/worker polling task queue/, 60_000);
});
after(async () => {
  await worker?.stop('SIGKILL', 5_000);
  await client?.connection.close();
  await partner?.close();
  await db?.drop();
});

/** Polls `check` until it returns a value other than undefined; fails after `ms` with `what`. */
async function until<T>(check: () => Promise<T | undefined>, what: () => string, ms = WAIT_MS): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what()}\n${worker.output()}`);
    await sleep(100);
  }
}

const rowOf = (sourceId: string) => db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });

/** The run's row once its status is `status`. */
function rowIn(sourceId: string, status: FetchRun['status']): Promise<FetchRun> {
  return until(
    async () => {
      const row = await db.prisma.fetchRun.findFirst({ where: { sourceId } });
      return row?.status === status ? row : undefined;
    },
    () => `${sourceId} to be ${status}`,
  );
}

/** The database's clock (next_run_at and updated_at are written with it). */
async function dbNow(): Promise<Date> {
  const [row] = await db.prisma.$queryRaw<{ now: Date }[]>`SELECT now() AS now`;
  return row?.now ?? assert.fail('no now()');
}

function start(sourceId: string) {
  return startFetch(
    { temporal: client, prisma: db.prisma, taskQueue, now: () => new Date('2026-11-29T12:00:00Z') },
    { sourceId, date: DATE, requestedBy: 'test' },
  );
}

describe('retry-wait (R1)', () => {
  it('retry-wait: a 429 with Retry-After puts the run in retry_wait (next_run_at, RateLimited) shown by runs list, status and metrics, fenced against a second claim; the next attempt sets it running, then it succeeds', async () => {
    const sourceId = 'rw-limited';
    const retryAfterS = 20;
    await createSource(db.prisma, sourceId, partner.url);
    partner.faults.add({ sourceId, kind: 'status', status: 429, retryAfter: String(retryAfterS), times: 1 });
    // The retry is held a moment by the partner, so that the run is seen `running` again mid-attempt.
    const held = partner.faults.add({ sourceId, kind: 'delay', delayMs: 8_000, afterRequests: 1, times: 1 });
    const { handle } = await start(sourceId);

    const waiting = await rowIn(sourceId, 'retry_wait');
    assert.equal(waiting.errorClass, 'RateLimited');
    assert.match(waiting.errorMessage ?? '', /rate limited \(429, retry after 20 s\)/);
    assert.ok(waiting.nextRunAt, 'next_run_at is set');
    // Written in one statement with the database's clock: the wait is exactly what the partner
    // asked for (Retry-After, under the preset's 1 minute maximum interval).
    assert.equal(waiting.nextRunAt.getTime() - waiting.updatedAt.getTime(), retryAfterS * 1000);
    assert.ok(waiting.nextRunAt > (await dbNow()), 'the next attempt is still ahead');
    assert.ok(waiting.leaseUntil && waiting.leaseUntil >= waiting.nextRunAt, 'the wait extends the lease');

    // While it waits: the CLI, the metrics, and a second workflow for the same business key (a
    // Schedule's id carries a timestamp suffix) all at once.
    const [[list, status], gauge, duplicate] = await Promise.all([
      // The same program as a child's, in this process: a child's start-up alone can take longer
      // than the wait on a busy machine. Its calls must not overlap: one after the other.
      (async (): Promise<[CliResult, CliResult]> => [
        await runCliInProcess(['runs', 'list', '--status', 'retry_wait', '--json'], env),
        await runCliInProcess(['status', '--json'], env),
      ])(),
      until(
        async () => {
          const m = await scrapeMetrics(metricsUrl);
          const v = m.get(RATE_LIMITED_GAUGE);
          return v === 1 ? v : undefined;
        },
        () => 'durable_fetch_runs_retry_wait to count the run',
      ),
      client.workflow.execute('fetchRecordsWorkflow', {
        workflowId: `fetch/fetch-records/${sourceId}/${DATE}-2026-11-29T02:00:00Z`,
        taskQueue,
        args: [{ sourceId, businessDate: DATE, correlationId: 'c-dup', requestedBy: 'schedule' }],
      }) as Promise<FetchRecordsResult>,
    ]);
    const still = await rowOf(sourceId);
    assert.equal(still.status, 'retry_wait', 'every observation above was made during the wait');
    assert.deepEqual(
      [still.leaseToken, still.attempt],
      [waiting.leaseToken, waiting.attempt],
      'not taken over',
    );

    assert.equal(list.code, 0, detail(list));
    const listed = JSON.parse(list.stdout) as {
      id: string;
      status: string;
      nextRunAt: string;
      errorClass: string;
    }[];
    assert.deepEqual(
      listed.map((r) => [r.id, r.status, r.nextRunAt, r.errorClass]),
      [[waiting.id, 'retry_wait', waiting.nextRunAt.toISOString(), 'RateLimited']],
    );
    assert.equal(status.code, 0, detail(status));
    const health = JSON.parse(status.stdout) as {
      retryWait: { runs: number; byErrorClass: Record<string, number>; nextDueAt: string };
    };
    assert.deepEqual(health.retryWait, {
      runs: 1,
      byErrorClass: { RateLimited: 1 },
      nextDueAt: waiting.nextRunAt.toISOString(),
    });
    assert.equal(gauge, 1);
    assert.deepEqual(
      { status: duplicate.status, existing: duplicate.status === 'duplicate' && duplicate.existingStatus },
      { status: 'duplicate', existing: 'retry_wait' },
    );

    // The next attempt starts: `running` again, next_run_at cleared, while the partner holds it.
    await until(
      // A fault is removed once it fired its last time: the retried request is being held.
      () => Promise.resolve(partner.faults.list().every((f) => f.id !== held) || undefined),
      () => 'the partner to hold the retried request',
    );
    const retried = await rowIn(sourceId, 'running');
    assert.equal(retried.nextRunAt, null);
    assert.equal(retried.errorClass, 'RateLimited', 'the last failure stays visible while running');

    const result = await handle.result();
    assert.equal(result.status, 'succeeded');
    const done = await rowOf(sourceId);
    assert.deepEqual(
      [done.status, done.nextRunAt, done.errorClass, done.errorMessage, done.recordsStored],
      ['succeeded', null, null, null, 30],
    );
    // The partner saw the retry no earlier than the row said it would come.
    const [first, second, ...more] = partner.ledger.entries({ sourceId });
    assert.deepEqual([first?.status, second?.status, more.length], [429, 200, 0]);
    assert.ok(
      new Date(second?.at ?? 0) >= waiting.nextRunAt,
      `${second?.at} before ${waiting.nextRunAt.toISOString()}`,
    );
    // The gauge follows the row: 0 once nothing waits (not its last value).
    await until(
      async () => (await scrapeMetrics(metricsUrl)).get(RATE_LIMITED_GAUGE) === 0 || undefined,
      () => 'durable_fetch_runs_retry_wait to drop to 0',
    );
  });

  it('retry-wait: a run terminated while it waits for its retry is found by the stuck-run sweep and settled, next_run_at cleared', async () => {
    const sourceId = 'rw-terminated';
    // Page fetches as activity tasks: a local fetch (the default) waits out a 5 s Retry-After
    // inside the worker, which goes on with the run's local steps until the workflow task it holds
    // reveals the termination.
    await createSource(db.prisma, sourceId, partner.url, { localFetch: false });
    partner.faults.add({ sourceId, kind: 'status', status: 429, retryAfter: '5', times: 1 });
    const { handle } = await start(sourceId);
    const waiting = await rowIn(sourceId, 'retry_wait');

    // As the Web UI's Terminate does: no workflow code runs, the row is left as it is.
    await handle.terminate('operator: stop this run while it waits');
    assert.equal((await rowOf(sourceId)).status, 'retry_wait', 'terminated during the wait');

    const settled = await until(
      async () => {
        const row = await rowOf(sourceId);
        return row.status === 'retry_wait' ? undefined : row;
      },
      () => `the sweep to settle ${sourceId}`,
    );
    assert.deepEqual(
      [settled.status, settled.nextRunAt, settled.leaseUntil, settled.errorClass],
      ['dead_lettered', null, null, 'Internal'],
    );
    const letters = await db.prisma.deadLetter.findMany({ where: { fetchRunId: waiting.id } });
    assert.deepEqual(
      letters.map((l) => [l.errorCode, l.workflowId]),
      [['WORKFLOW_TERMINATED', waiting.workflowId]],
    );
    // The step never ran again: the partner saw the one limited request only.
    assert.deepEqual(
      partner.ledger.entries({ sourceId }).map((e) => e.status),
      [429],
    );
  });
});
