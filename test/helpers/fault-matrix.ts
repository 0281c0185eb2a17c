/**
 * The fault matrix (R12c, issue 35 §2): each fault of a real dependency, landed at each point of a
 * run where losing it would hurt, on real processes — a PostgreSQL of the matrix's own behind a
 * wire-protocol proxy that lands the fault at one statement (test/helpers/pg-proxy.ts), a Temporal
 * dev server of its own on a state file (so it can be killed and started again on that state), a
 * `durable-fetch worker` and a `durable-fetch publisher` process, a NATS server of its own (the
 * run's completion event goes to JetStream, the others to the partner's webhook), and the demo
 * partner, whose own lists judge each run: its records once in our rows, each outbox event applied
 * once by the partner (deliveries beyond the first are duplicates it suppressed) or held once by
 * the stream, one submission, no dead letter, the run succeeded. The cells (points and faults) are
 * in fault-matrix-cells.ts.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { RUN_COMPLETED_TOPIC } from '../../activities/outbox.ts';
import { startFetch } from '../../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../../partner/server.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { prismaOn } from '../../db/client.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../worker/stack/postgres.ts';
import { prepareDatabase } from '../../db/prepare-database.ts';
import { freePort, isPidAlive } from '../../runtime/process-utils.ts';
import { type DevServer, startDevServer } from '../../worker/stack/temporal-dev-server.ts';
import { runState, type RunState, stateLine } from './backup-stack.ts';
import { createSource } from './deps.ts';
import { waitFor } from './outbox.ts';
import type {
  MatrixStack,
  PartnerFault,
  PartnerPoint,
  StackFault,
  StatementPoint,
} from './fault-matrix-cells.ts';
import { type NatsServer, startNatsServer } from './nats-server.ts';
import { startPgProxy } from './pg-proxy.ts';
import { spawnTs, spawnWorker, within } from './process.ts';
import { engineConnection } from '../../db/pool-config.ts';

export type { CellRun, MatrixStack } from './fault-matrix-cells.ts';

const RECORDS = 120;
const PAGE_SIZE = 50;
const DATE = '2026-06-01';
/** The JetStream stream the publisher delivers the run's completion event to. */
const NATS_STREAM = 'DF_MATRIX';
const NATS_SUBJECTS = 'dfmatrix';

/** A fault armed for one run: resolves with what it landed at; `after` waits for its end. */
interface Landing {
  landed: Promise<string[]>;
  after(): Promise<void>;
}

function submissionReference(sourceId: string): string {
  return `fetch-records:${sourceId}:${DATE}:submit-summary:r1`;
}

/** `SQL` on the database `url` as a one-off session (not behind the proxy). */
async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client(engineConnection(url));
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
  const nats: NatsServer = await startNatsServer(path.join(tmp, 'nats'));
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
      DURABLE_FETCH_OUTBOX_ROUTES: `temporal.start_workflow=temporal,${RUN_COMPLETED_TOPIC}=nats,*=webhook`,
      DURABLE_FETCH_NATS_URL: nats.url,
      DURABLE_FETCH_NATS_STREAM: NATS_STREAM,
      DURABLE_FETCH_NATS_SUBJECT_PREFIX: NATS_SUBJECTS,
      LOG_LEVEL: 'info',
    });
    await p.waitFor(/publisher running/, 120_000);
    return p;
  };
  let worker = await spawnWorkerNow();
  let publisher = await spawnPublisherNow();

  /** Arms a fault of a process or a server at the statement `point` names. */
  const landAtStatement = (fault: StackFault, point: StatementPoint): Landing => ({
    landed: proxy.atEndOf(point.statement, point.point, () => fault.atPoint(stack), {
      at: point.at,
      cut: fault.cut,
    }),
    after: async () => {
      await fault.after?.(stack);
    },
  });

  /** Arms a partner fault on the run's requests of `point`'s route; it ends `lastsMs` after it landed. */
  const landAtPartner = (fault: PartnerFault, point: PartnerPoint, sourceId: string): Landing => {
    const matchers =
      point.route === 'records'
        ? { sourceId }
        : point.route === 'submissions'
          ? { action: 'submit' as const, reference: submissionReference(sourceId) }
          : {};
    const id = partner.faults.add({
      route: point.route,
      ...matchers,
      ...fault.spec,
      times: fault.times ?? 1_000_000,
    });
    const hit = () => {
      const active = partner.faults.list().find((f) => f.id === id);
      return !active || active.seen > 0;
    };
    return {
      landed: waitFor(hit, `the partner's first ${point.route} request`, 180_000).then(() => [
        `${fault.name} on ${point.route}`,
      ]),
      after: async () => {
        await sleep(fault.lastsMs);
        partner.faults.remove(id);
      },
    };
  };

  /** The run's events the publisher delivered to JetStream, each asserted there exactly once. */
  const heldByStream = async (runId: string): Promise<Set<string>> => {
    const routed = await prisma.outboxEvent.findMany({
      where: { aggregateId: runId, topic: RUN_COMPLETED_TOPIC },
      select: { id: true },
    });
    // The publisher creates the stream at its first delivery: a run without such events may find none.
    if (routed.length === 0) return new Set();
    const inStream = await nats.messageIds(NATS_STREAM);
    for (const { id } of routed) {
      assert.equal(inStream.filter((m) => m === id).length, 1, `event ${id} once in the JetStream stream`);
    }
    return new Set(routed.map((e) => e.id));
  };

  let natsRestart: Promise<void> | undefined;
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

    async natsOutage(ms) {
      await nats.kill();
      natsRestart = sleep(ms).then(() => nats.start());
    },
    async natsBack() {
      await natsRestart;
    },

    async run(fault, point) {
      const sourceId = `fm${++n}`;
      await createSource(prisma, sourceId, partner.url, {
        pageSize: PAGE_SIZE,
        submitSummary: true,
        submitMaxProcessingMs: 2_000,
      });
      const refused = point.process !== 'partner' && point.refused === true;
      if (refused) partner.faults.add({ sourceId, kind: 'status', status: 400, times: 1_000 });
      const landing =
        'spec' in fault
          ? landAtPartner(fault, point as PartnerPoint, sourceId)
          : landAtStatement(fault, point as StatementPoint);
      const ctx = { temporal: client, prisma, taskQueue, now: () => new Date('2026-11-29T12:00:00Z') };
      const { handle } = await startFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' });
      const output = () =>
        `worker:\n${worker.output().slice(-3000)}\npublisher:\n${publisher.output().slice(-2000)}`;
      const statements = await within(
        landing.landed,
        180_000,
        () => `the fault at ${point.name}:\n${output()}`,
      );
      await landing.after();
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
      if (refused) partner.faults.clear();
      const state = await runState(prisma, partner, sourceId, DATE, await heldByStream(run.id));
      if (refused) {
        assertRefused(state);
      } else {
        assertWhole(state);
        const keys = await prisma.idempotencyRecord.count({ where: { key: { contains: `:${sourceId}:` } } });
        assert.equal(keys, state.pagesStored, `one idempotency record per page: ${stateLine(state)}`);
        const reference = submissionReference(sourceId);
        if ('spec' in fault && fault.lateEffect) {
          const late = partner.ledger
            .entries()
            .filter((e) => e.reference === reference && e.late && e.effect);
          assert.equal(late.length, 1, 'the partner applied the submission after the worker left');
        }
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
      await nats.close();
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
  assert.ok(
    s.allApplied && s.applied + s.heldElsewhere === s.events,
    `each event applied once by the partner, or held once by the stream: ${line}`,
  );
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
