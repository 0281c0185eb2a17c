/**
 * The fault matrix (R12c, issue 35 §2): each fault of a real dependency, landed at each point of a
 * run where losing it would hurt, on real processes — a PostgreSQL of the matrix's own behind a
 * wire-protocol proxy that lands the fault at one statement (test/helpers/pg-proxy.ts), a Temporal
 * dev server of its own on a state file (so it can be killed and started again on that state), a
 * `durable-fetch worker` and a `durable-fetch publisher` process, and the demo partner, whose own
 * lists judge each run: its records once in our rows, each outbox event applied once by the
 * partner (deliveries beyond the first are duplicates it suppressed), one submission, no dead
 * letter, the run succeeded.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { startFetch } from '../../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../../partner/server.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { prismaOn } from '../../worker/db.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../worker/postgres.ts';
import { prepareDatabase } from '../../worker/prepare-database.ts';
import { freePort, isPidAlive } from '../../worker/process-utils.ts';
import { type DevServer, startDevServer } from '../../worker/temporal-dev-server.ts';
import { runState, type RunState, stateLine } from './backup-stack.ts';
import { createSource } from './deps.ts';
import { waitFor } from './outbox.ts';
import { type CutPoint, type FaultOptions, type PgProxy, startPgProxy } from './pg-proxy.ts';
import { spawnTs, spawnWorker, type Spawned, within } from './process.ts';

const RECORDS = 120;
const PAGE_SIZE = 50;
const DATE = '2026-06-01';

/** Where in a run a fault lands: a statement of the worker's or the publisher's, before or after. */
export interface InjectionPoint {
  name: string;
  statement: RegExp;
  point: CutPoint;
  at: NonNullable<FaultOptions['at']>;
  /** Whose statement it is: a fault of the other process does not apply here. */
  process: 'worker' | 'publisher';
  /** The partner refuses every page (HTTP 400): the run must end dead-lettered, once. */
  refused?: boolean;
}

export const POINTS: readonly InjectionPoint[] = [
  {
    name: 'before the store transaction',
    statement: /FOR UPDATE\)\s+SELECT s\.id, s\.name/,
    point: 'before',
    at: 'statement',
    process: 'worker',
  },
  {
    name: 'inside it',
    statement: /INSERT INTO fetched_record/,
    point: 'after',
    at: 'statement',
    process: 'worker',
  },
  {
    name: 'at COMMIT',
    statement: /INSERT INTO idempotency_record/,
    point: 'before',
    at: 'end',
    process: 'worker',
  },
  {
    name: 'after commit, before completion',
    statement: /INSERT INTO idempotency_record/,
    point: 'after',
    at: 'end',
    process: 'worker',
  },
  {
    name: 'between the partner call and recording its outcome',
    statement: /partner_id = \$\d+, partner_state/,
    point: 'before',
    at: 'end',
    process: 'worker',
  },
  {
    name: "between a sink's acknowledgement and marking published",
    statement: /SET status = 'published', published_at/,
    point: 'before',
    at: 'end',
    process: 'publisher',
  },
];

/**
 * Each write a run commits, by a statement of it (the engine's own SQL), for a fault at the end
 * of its transaction: before its COMMIT reaches the server (nothing committed) and after the
 * server committed it, before the worker hears (test/faults/commit-kill.test.ts).
 */
const WRITES: readonly { name: string; statement: RegExp; refused?: boolean }[] = [
  { name: 'the claim', statement: /UPDATE fetch_run\s+SET status = 'running',\s+attempt/ },
  { name: "a page's store", statement: /INSERT INTO idempotency_record/ },
  { name: "the run's completion", statement: /SET status = 'succeeded'/ },
  { name: 'the downstream intent', statement: /INSERT INTO downstream_action/ },
  { name: 'counting the partner call', statement: /SET attempts = a\.attempts \+ 1/ },
  { name: "recording the call's outcome", statement: /partner_id = \$\d+, partner_state/ },
  { name: 'the dead letter', statement: /INSERT INTO dead_letter/, refused: true },
];

export const WRITE_POINTS: readonly InjectionPoint[] = WRITES.flatMap((w) =>
  (['before', 'after'] as const).map((point): InjectionPoint => ({
    name: `${w.name}, ${point === 'before' ? 'before its COMMIT reached the server' : 'after the server committed it'}`,
    statement: w.statement,
    point,
    at: 'end',
    process: 'worker',
    ...(w.refused ? { refused: true } : {}),
  })),
);

/** A fault: what happens while the statement is held, and what brings the system back after. */
export interface Fault {
  name: string;
  /** The processes whose statements it applies to. */
  applies: readonly InjectionPoint['process'][];
  /** Cut the held connection once `atPoint` ran (a fault of the connection), or let it go on. */
  cut: boolean;
  atPoint(stack: MatrixStack): Promise<void>;
  /** After the held statement was cut or released: e.g. wait for a drained process, start it again. */
  after?(stack: MatrixStack): Promise<void>;
}

const BOTH = ['worker', 'publisher'] as const;

export const FAULTS: readonly Fault[] = [
  {
    name: 'worker SIGKILL',
    applies: ['worker'],
    cut: true,
    atPoint: (s) => s.restartWorker('SIGKILL'),
  },
  {
    name: 'worker SIGTERM',
    applies: ['worker'],
    // Its shutdown waits for the held statement's activity: the statement goes on.
    cut: false,
    atPoint: (s) => {
      s.worker.child.kill('SIGTERM');
      return Promise.resolve();
    },
    after: (s) => s.restartWorker(),
  },
  {
    name: 'worker SIGSTOP 15 s, SIGCONT',
    applies: ['worker'],
    cut: false,
    atPoint: async (s) => {
      s.worker.child.kill('SIGSTOP');
      await sleep(15_000);
      s.worker.child.kill('SIGCONT');
    },
  },
  {
    name: 'publisher SIGKILL',
    applies: ['publisher'],
    cut: true,
    atPoint: (s) => s.restartPublisher(),
  },
  {
    name: 'Temporal SIGKILL, restarted on its state',
    applies: ['worker'],
    cut: false,
    atPoint: (s) => s.restartTemporal(),
  },
  {
    name: 'PostgreSQL stopped hard, restarted',
    applies: BOTH,
    cut: true,
    atPoint: (s) => s.restartPostgres(),
  },
  {
    name: 'PostgreSQL backends terminated',
    applies: BOTH,
    cut: true,
    atPoint: (s) => s.terminateBackends(),
  },
  {
    name: 'PostgreSQL refusing connections 10 s',
    applies: BOTH,
    cut: true,
    atPoint: async (s) => {
      await s.allowConnections(false);
      await s.terminateBackends();
      await sleep(10_000);
      await s.allowConnections(true);
    },
  },
  {
    name: 'PostgreSQL silent 10 s',
    applies: BOTH,
    cut: false,
    atPoint: async (s) => {
      s.proxy.hang();
      await sleep(10_000);
      s.proxy.resume();
    },
  },
];

/** One run of one cell: how it ended, and how long after the fault ended. */
export interface CellRun {
  state: RunState;
  /** The statement the fault landed at. */
  statement: string;
  recoveryMs: number;
  /** Deliveries of the run's events beyond the first, which the partner suppressed. */
  suppressed: number;
}

export interface MatrixStack {
  worker: Spawned;
  proxy: PgProxy;
  restartWorker(signal?: NodeJS.Signals): Promise<void>;
  restartPublisher(): Promise<void>;
  restartTemporal(): Promise<void>;
  restartPostgres(): Promise<void>;
  terminateBackends(): Promise<void>;
  allowConnections(allowed: boolean): Promise<void>;
  /** Lands `fault` at `point` of one new run and checks the run against the partner. */
  run(fault: Fault, point: InjectionPoint): Promise<CellRun>;
  stop(): Promise<void>;
}

/** `SQL` on the database `url` as a one-off session (not behind the proxy). */
async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function startMatrixStack(): Promise<MatrixStack> {
  const cliPath = process.env.DF_TEST_TEMPORAL_CLI;
  if (!cliPath) throw new Error('DF_TEST_TEMPORAL_CLI is not set: run the tests with test/run.ts');
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'df-fault-matrix-'));
  const dataDir = path.join(tmp, 'pg');
  const pgPort = await freePort();
  let postgres: EmbeddedPostgres = await startEmbeddedPostgres({ dataDir, port: pgPort });
  const dbName = 'durable_fetch';
  const url = postgres.urlFor(dbName);
  await prepareDatabase(url);
  const proxy = await startPgProxy({ host: '127.0.0.1', port: pgPort });
  const prisma: PrismaClient = prismaOn({ connectionString: url, max: 2 });
  const partner: PartnerServer = await startPartner({ port: 0, recordCount: () => RECORDS });
  const temporalPort = await freePort();
  const dbFile = path.join(tmp, 'temporal.db');
  const startTemporal = () => startDevServer({ cliPath, port: temporalPort, headless: true, dbFile });
  let temporal: DevServer = await startTemporal();
  const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
  const taskQueue = `test-fault-matrix-${randomUUID()}`;
  const env = {
    DATABASE_URL: proxy.via(url),
    TEMPORAL_ADDRESS: temporal.address,
    DURABLE_FETCH_TASK_QUEUE: taskQueue,
  };
  const spawnWorkerNow = async () => {
    const w = spawnWorker({ ...env, PARTNER_PAGE_LIMIT: String(PAGE_SIZE), LOG_LEVEL: 'warn' });
    await w.waitFor(/worker polling task queue/, 120_000);
    return w;
  };
  const spawnPublisherNow = async () => {
    const p = spawnTs(['bin/durable-fetch.js', 'publisher'], {
      ...env,
      DURABLE_FETCH_WEBHOOK_URL: `${partner.url}/events`,
      LOG_LEVEL: 'info',
    });
    await p.waitFor(/publisher running/, 120_000);
    return p;
  };
  let worker = await spawnWorkerNow();
  let publisher = await spawnPublisherNow();

  let n = 0;
  const stack: MatrixStack = {
    get worker() {
      return worker;
    },
    proxy,
    async restartWorker(signal) {
      if (signal) await worker.stop(signal, 5_000);
      else await within(worker.ended, 60_000, () => `the worker to drain:\n${worker.output()}`);
      await sleep(1_000);
      worker = await spawnWorkerNow();
    },
    async restartPublisher() {
      await publisher.stop('SIGKILL', 5_000);
      await sleep(1_000);
      publisher = await spawnPublisherNow();
    },
    async restartTemporal() {
      process.kill(temporal.pid, 'SIGKILL');
      for (let i = 0; i < 100 && isPidAlive(temporal.pid); i++) await sleep(100);
      await sleep(2_000);
      temporal = await startTemporal();
    },
    async restartPostgres() {
      const pid = Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      process.kill(pid, 'SIGQUIT');
      for (let i = 0; i < 300 && isPidAlive(pid); i++) await sleep(100);
      assert.ok(!isPidAlive(pid), 'the postmaster is gone');
      await sleep(2_000);
      postgres = await startEmbeddedPostgres({ dataDir, port: pgPort });
    },
    terminateBackends: () =>
      adminQuery(
        postgres.adminUrl,
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${dbName}' AND pid <> pg_backend_pid()`,
      ),
    allowConnections: (allowed) =>
      adminQuery(
        postgres.adminUrl,
        `ALTER DATABASE ${dbName} ALLOW_CONNECTIONS ${allowed ? 'true' : 'false'}`,
      ),

    async run(fault, point) {
      const sourceId = `fm${++n}`;
      await createSource(prisma, sourceId, partner.url, {
        pageSize: PAGE_SIZE,
        submitSummary: true,
        submitMaxProcessingMs: 2_000,
      });
      if (point.refused) partner.faults.add({ sourceId, kind: 'status', status: 400, times: 1_000 });
      const landed = proxy.atEndOf(point.statement, point.point, () => fault.atPoint(stack), {
        at: point.at,
        cut: fault.cut,
      });
      const ctx = { temporal: client, prisma, taskQueue, now: () => new Date('2026-11-29T12:00:00Z') };
      const { handle } = await startFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' });
      const output = () =>
        `worker:\n${worker.output().slice(-3000)}\npublisher:\n${publisher.output().slice(-2000)}`;
      const statements = await within(landed, 180_000, () => `the fault at ${point.name}:\n${output()}`);
      await fault.after?.(stack);
      const recovered = Date.now();
      await within(
        handle.result().catch(() => undefined),
        300_000,
        () => `the run after ${fault.name} at ${point.name}:\n${output()}`,
      );
      const run = await prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
      await waitFor(
        async () =>
          (await prisma.outboxEvent.count({
            where: { aggregateId: run.id, status: { not: 'published' } },
          })) === 0,
        `every event of ${sourceId} published`,
        120_000,
      );
      const recoveryMs = Date.now() - recovered;
      // The partner's list is read through the route the refusal blocked.
      if (point.refused) partner.faults.clear();
      const state = await runState(prisma, partner, sourceId, DATE);
      if (point.refused) {
        assertRefused(state);
      } else {
        assertWhole(state);
        const keys = await prisma.idempotencyRecord.count({ where: { key: { contains: `:${sourceId}:` } } });
        assert.equal(keys, state.pagesStored, `one idempotency record per page: ${stateLine(state)}`);
        const reference = `fetch-records:${sourceId}:${DATE}:submit-summary:r1`;
        const [action] = await prisma.downstreamAction.findMany({ where: { fetchRunId: run.id } });
        assert.equal(
          action?.partnerId,
          partner.submissions.byReference(reference)[0]?.id,
          'the ledger row holds the partner id of the one submission',
        );
      }
      return { state, statement: statements.at(-1) ?? '', recoveryMs, suppressed: state.redelivered };
    },
    async stop() {
      await Promise.all([worker.stop('SIGKILL', 5_000), publisher.stop('SIGKILL', 5_000)]);
      await client.connection.close();
      await temporal.stop();
      await partner.close();
      await prisma.$disconnect();
      await proxy.close();
      await postgres.stop();
      await rm(tmp, { recursive: true, force: true });
    },
  };
  return stack;
}

/** The invariants of a run that met a fault, judged by the partner's own lists. */
function assertWhole(s: RunState): void {
  const line = stateLine(s);
  assert.equal(s.status, 'succeeded', line);
  assert.ok(s.rowsMatchPartner && s.rows === s.partnerRecords, `one row per partner record: ${line}`);
  assert.equal(s.events, s.eventSteps, `one outbox event per step: ${line}`);
  assert.ok(s.allApplied && s.applied === s.events, `each event applied once by the partner: ${line}`);
  assert.deepEqual([s.submits, s.voids, s.actions], [1, 0, ['1:confirmed']], `one submission: ${line}`);
  assert.equal(s.live.length, 1, `the partner holds one live submission: ${line}`);
  assert.deepEqual(s.deadLetters, [], line);
}

/** A run the partner refused: dead-lettered once, whatever the fault; no rows, no submission. */
function assertRefused(s: RunState): void {
  const line = stateLine(s);
  assert.equal(s.status, 'dead_lettered', line);
  assert.equal(s.deadLetters.length, 1, `one dead letter: ${line}`);
  assert.match(s.deadLetters[0] ?? '', /^open InvalidInput\//, line);
  assert.deepEqual([s.rows, s.submits, s.actions], [0, 0, []], line);
  assert.ok(s.allApplied, `every event of the run reached the partner: ${line}`);
}
