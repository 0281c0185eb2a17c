/**
 * The stack for killing PostgreSQL at the end of a step's write (R12: crash at each step; issue
 * 35): a PostgreSQL the test owns (embedded, stopped hard with SIGQUIT — an immediate shutdown and
 * crash recovery at the next start, as a failover or a host reboot looks), a wire-protocol proxy
 * in front of it that lands the kill exactly before the write's COMMIT reaches the server, or
 * after the server answered it (committed; the worker never hears so), a real `durable-fetch
 * worker` process connected through the proxy, the shared test Temporal server, the demo partner.
 *
 * Each case runs one run of its own source, judged by the partner's own records and effects and
 * by the rows: each record, event and idempotency key once, the run ended as it should.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { startFetch } from '../../client/start-fetch.ts';
import { makeRecord } from '../../partner/records.ts';
import { startPartner, type PartnerServer } from '../../partner/server.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { prismaOn } from '../../worker/db.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../worker/postgres.ts';
import { prepareDatabase } from '../../worker/prepare-database.ts';
import { freePort, isPidAlive } from '../../worker/process-utils.ts';
import { pageKeyFor } from '../../workflows/business-key.ts';
import { createSource } from './deps.ts';
import { type CutPoint, type PgProxy, startPgProxy } from './pg-proxy.ts';
import { spawnWorker, type Spawned, within } from './process.ts';
import { temporalAddress, testClient } from './temporal.ts';

const RECORDS = 120;
const PAGE_SIZE = 50;
const PAGES = Math.ceil(RECORDS / PAGE_SIZE);
const DATE = '2026-04-01';
/** Down this long after the kill: the worker's steps meet refused connections, then recovery. */
const DOWN_MS = 2_000;

/** A step's write, found by a statement of it (the statements are the engine's own SQL). */
export interface KillCase {
  step: string;
  statement: RegExp;
  /** The run submits its summary downstream (the ledger and the partner's submissions). */
  submits?: boolean;
  /** The partner refuses every page (HTTP 400): the run ends dead-lettered. */
  refused?: boolean;
}

export const KILL_CASES: readonly KillCase[] = [
  { step: 'claimRun', statement: /UPDATE fetch_run\s+SET status = 'running',\s+attempt/ },
  { step: 'storePage', statement: /INSERT INTO idempotency_record/ },
  { step: 'completeRun', statement: /SET status = 'succeeded'/ },
  { step: 'recordDownstreamIntent', statement: /INSERT INTO downstream_action/, submits: true },
  { step: 'submit: count the call', statement: /SET attempts = a\.attempts \+ 1/, submits: true },
  { step: 'submit: record its outcome', statement: /partner_id = \$\d+, partner_state/, submits: true },
  { step: 'finishRun (dead letter)', statement: /INSERT INTO dead_letter/, refused: true },
];

export interface KillStack {
  /** Kills PostgreSQL at `point` of the case's write, restarts it, and checks the run's end. */
  run(c: KillCase, point: CutPoint): Promise<{ statements: string[]; settledMs: number }>;
  stop(): Promise<void>;
}

export async function startKillStack(): Promise<KillStack> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'df-commit-kill-'));
  const dataDir = path.join(tmp, 'data');
  const port = await freePort();
  let server: EmbeddedPostgres = await startEmbeddedPostgres({ dataDir, port });
  const url = server.urlFor('durable_fetch');
  await prepareDatabase(url);
  const proxy: PgProxy = await startPgProxy({ host: '127.0.0.1', port });
  const prisma: PrismaClient = prismaOn({ connectionString: url, max: 2 });
  const partner: PartnerServer = await startPartner({ port: 0, recordCount: () => RECORDS });
  const client: Client = await testClient();
  const taskQueue = `test-commit-kill-${randomUUID()}`;
  const worker: Spawned = spawnWorker({
    DATABASE_URL: proxy.via(url),
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_TASK_QUEUE: taskQueue,
    PARTNER_PAGE_LIMIT: String(PAGE_SIZE),
    LOG_LEVEL: 'warn',
  });
  await worker.waitFor(/worker polling task queue/, 60_000);

  /** SIGQUIT to the postmaster: every backend dies at once, nothing is flushed or answered. */
  const killServer = async () => {
    const pid = Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    process.kill(pid, 'SIGQUIT');
    for (let i = 0; i < 300 && isPidAlive(pid); i++) await sleep(100);
    assert.ok(!isPidAlive(pid), 'the postmaster is gone');
  };

  let n = 0;
  return {
    async run(c, point) {
      const sourceId = `ck${++n}`;
      await createSource(prisma, sourceId, partner.url, {
        pageSize: PAGE_SIZE,
        ...(c.submits ? { submitSummary: true, submitMaxProcessingMs: 2_000 } : {}),
      });
      if (c.refused) partner.faults.add({ sourceId, kind: 'status', status: 400, times: 1_000 });
      const killed = proxy.atEndOf(c.statement, point, killServer);
      const ctx = { temporal: client, prisma, taskQueue, now: () => new Date('2026-11-29T12:00:00Z') };
      const { handle } = await startFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' });
      const statements = await within(killed, 120_000, () => `the kill at ${c.step}:\n${worker.output()}`);
      await sleep(DOWN_MS);
      server = await startEmbeddedPostgres({ dataDir, port });
      const back = Date.now();
      const outcome = await within(
        handle.result().then(
          (r) => r.status,
          () => 'failed',
        ),
        180_000,
        () => `the run after the kill at ${c.step}:\n${worker.output()}`,
      );
      const settledMs = Date.now() - back;
      await checkRun(prisma, partner, sourceId, c, outcome);
      return { statements, settledMs };
    },
    async stop() {
      await worker.stop('SIGTERM', 15_000).catch(() => worker.stop('SIGKILL', 5_000));
      await client.connection.close();
      await partner.close();
      await prisma.$disconnect();
      await proxy.close();
      await server.stop();
      await rm(tmp, { recursive: true, force: true });
    },
  };
}

/** The run's end and every row it left, against what the partner holds. */
async function checkRun(
  prisma: PrismaClient,
  partner: PartnerServer,
  sourceId: string,
  c: KillCase,
  outcome: string,
): Promise<void> {
  const run = await prisma.fetchRun.findFirstOrThrow({ where: { sourceId } });
  const letters = await prisma.deadLetter.count({ where: { sourceId } });
  if (c.refused) {
    assert.equal(outcome, 'failed', 'the refused run fails');
    assert.deepEqual([run.status, letters], ['dead_lettered', 1], 'one dead letter, once');
    assert.equal(await prisma.fetchedRecord.count({ where: { sourceId } }), 0);
    return;
  }
  const letter = await prisma.deadLetter.findFirst({ where: { sourceId } });
  const why = letter
    ? `, dead letter: ${letter.errorType} ${letter.errorCode ?? ''} ${letter.errorMessage}`
    : '';
  assert.equal(outcome, 'succeeded', `the run ends succeeded (row: ${run.status}${why})`);
  assert.deepEqual(
    [run.status, run.pagesStored, run.recordsStored, letters],
    ['succeeded', PAGES, RECORDS, 0],
  );
  const stored = await prisma.fetchedRecord.findMany({ where: { sourceId }, select: { externalId: true } });
  const held = Array.from({ length: RECORDS }, (_, i) => makeRecord(sourceId, DATE, i + 1).id);
  assert.deepEqual(
    stored.map((r) => r.externalId).sort(),
    held.sort(),
    "the rows are the partner's list, once",
  );
  const events = await prisma.outboxEvent.count({ where: { aggregateId: run.id } });
  assert.equal(events, PAGES + 1, 'one event per page and one for the end');
  const pageKeys = Array.from({ length: PAGES }, (_, pageNo) =>
    pageKeyFor({ jobType: 'fetch-records', sourceId, businessDate: DATE }, pageNo),
  );
  const keys = await prisma.idempotencyRecord.count({ where: { key: { contains: `:${sourceId}:` } } });
  assert.equal(keys, PAGES, 'one idempotency record per page');
  assert.equal(await prisma.idempotencyRecord.count({ where: { key: { in: pageKeys } } }), PAGES);
  if (c.submits) {
    const reference = `fetch-records:${sourceId}:${DATE}:submit-summary:r1`;
    const effects = partner.ledger.entries({ action: 'submit', reference }).filter((e) => e.effect);
    assert.equal(effects.length, 1, 'one submission took effect at the partner');
    assert.equal(partner.submissions.byReference(reference).length, 1, 'the partner holds one submission');
    const actions = await prisma.downstreamAction.findMany({ where: { fetchRunId: run.id } });
    assert.deepEqual(
      actions.map((a) => [a.state, a.partnerId]),
      [['confirmed', partner.submissions.byReference(reference)[0]?.id]],
      'one ledger row, confirmed with the partner id',
    );
  }
}
