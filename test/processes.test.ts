// The real entry points as processes: `npm start`'s orchestrator (worker/stack/start.ts) and
// `durable-fetch worker`, against the shared Temporal server and a cloned database, stopped by a
// signal as an operator (or Ctrl-C) would.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { freePort } from '../runtime/process-utils.ts';
import { demoTokenLines, demoTokens } from '../worker/stack/demo-source.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { spawnTs } from './helpers/process.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

let db: TestDatabase;
let client: Client;
let dataDir: string;

before(async () => {
  db = await useTestDatabase();
  client = await testClient();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'df-start-'));
});
after(async () => {
  await client?.connection.close();
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('processes', () => {
  it('start: brings up partner, worker and the runs of the three demo jobs (one declarative, from examples/sources.yaml), reports their success, and stops cleanly on SIGINT', async () => {
    const partnerPort = await freePort();
    const start = spawnTs(['worker/stack/start.ts'], {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: `test-start-${randomUUID()}`,
      DURABLE_FETCH_DATA_DIR: dataDir,
      PARTNER_PORT: String(partnerPort),
    });
    try {
      const [, records, pages] = await start.waitFor(
        /demo run succeeded: (\d+) records in (\d+) pages/,
        90_000,
      );
      // The second job's source runs next to it: its own table, its journal entry downstream.
      const [, rates, fxPages] = await start.waitFor(
        /demo-fx run succeeded: (\d+) records in (\d+) pages/,
        60_000,
      );
      // The third, a declarative source of the example sources file: configuration only.
      const [, items, catalogPages] = await start.waitFor(
        /demo-catalog run succeeded: (\d+) records in (\d+) pages/,
        60_000,
      );
      const catalogRun = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'demo-catalog' } });
      const day = catalogRun.businessDate.toISOString().slice(0, 10);
      const partnerIds = (
        (await (await fetch(`http://127.0.0.1:${partnerPort}/_admin/catalog?date=${day}`)).json()) as {
          ids: string[];
        }
      ).ids;
      // The publisher relays the run's events to the partner's webhook; wait for all of them
      // (stopping waits only for deliveries in flight, it claims nothing new).
      const deadline = Date.now() + 30_000;
      while ((await db.prisma.outboxEvent.count({ where: { status: { not: 'published' } } })) > 0) {
        assert.ok(Date.now() < deadline, 'every outbox event is published within 30 s');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const code = await start.stop('SIGINT', 30_000);
      assert.equal(code, 0, start.output());
      assert.match(start.output(), /stopped; state is kept/);
      // Once, bare, the lines another shell needs for the demo sources' partner tokens.
      const printed = start.output().split('\n');
      for (const line of demoTokenLines(await demoTokens({}))) {
        assert.equal(printed.filter((l) => l === line).length, 1, line);
      }

      const run = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'demo' } });
      assert.equal(run.status, 'succeeded');
      assert.equal(run.recordsStored, Number(records));
      assert.equal(run.pagesStored, Number(pages));
      assert.equal((run.payload as { requestedBy: string }).requestedBy, 'npm-start');
      assert.equal(await db.prisma.fetchedRecord.count({ where: { sourceId: 'demo' } }), Number(records));
      assert.equal(await db.prisma.outboxEvent.count({ where: { aggregateId: run.id } }), Number(pages) + 1);
      const fx = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'demo-fx' } });
      assert.deepEqual(
        [fx.status, fx.jobType, fx.recordsStored],
        ['succeeded', 'exchange-rates', Number(rates)],
      );
      assert.equal(await db.prisma.exchangeRate.count({ where: { sourceId: 'demo-fx' } }), Number(rates));
      const catalog = await db.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'demo-catalog' } });
      assert.deepEqual(
        [catalog.status, catalog.jobType, catalog.recordsStored],
        ['succeeded', 'http', Number(items)],
      );
      const stored = await db.prisma.fetchedRecord.findMany({
        where: { sourceId: 'demo-catalog' },
        select: { externalId: true },
      });
      assert.deepEqual(
        stored.map((r) => r.externalId).sort(),
        [...partnerIds].sort(),
        'the partner catalog, once each',
      );
      // Each run was started transactionally: one start command each, relayed, with the run id recorded.
      const commands = await db.prisma.outboxEvent.findMany({
        where: { topic: 'temporal.start_workflow' },
        orderBy: { seq: 'asc' },
      });
      assert.deepEqual(
        commands.map((c) => [c.status, (c.result as { runId?: string }).runId]),
        [
          ['published', run.workflowRunId],
          ['published', fx.workflowRunId],
          ['published', catalog.workflowRunId],
        ],
      );
      // The partner's ledger file (for operators) recorded every request: the run's pages, and one
      // webhook delivery per outbox event of the run, each applied once.
      const ledger = (await readFile(path.join(dataDir, 'partner', 'ledger.jsonl'), 'utf8'))
        .trim()
        .split('\n');
      const entries = ledger.map(
        (l) =>
          JSON.parse(l) as {
            path: string;
            sourceId?: string;
            status: number;
            duplicate?: boolean;
            action?: string;
            effect?: boolean;
          },
      );
      const fetches = entries.filter((e) => e.path.startsWith('/sources/'));
      const events = entries.filter((e) => e.path === '/events');
      assert.ok(fetches.length >= Number(pages));
      assert.ok(fetches.every((e) => e.sourceId === 'demo' && e.status === 200));
      assert.equal(
        events.filter((e) => e.status === 200 && e.duplicate === false).length,
        Number(pages) + 1 + Number(fxPages) + 1 + Number(catalogPages) + 1,
      );
      // The demo job's downstream step: one submission, confirmed, recorded in the ledger.
      const submissions = entries.filter((e) => e.path.startsWith('/submissions'));
      assert.deepEqual(
        submissions.map((e) => [e.action, e.status, e.effect]),
        [
          ['submit', 201, true],
          ['confirm', 200, true],
        ],
      );
      const action = await db.prisma.downstreamAction.findFirstOrThrow({ where: { fetchRunId: run.id } });
      assert.deepEqual([action.state, action.partnerState], ['confirmed', 'confirmed']);
      // The exchange-rates job's: one journal entry posted, nothing else.
      const journal = entries.filter((e) => e.path.startsWith('/journal-entries'));
      assert.deepEqual(
        journal.map((e) => [e.action, e.status, e.effect]),
        [['post', 201, true]],
      );
    } finally {
      await start.stop('SIGKILL', 5_000);
    }
  });

  it('worker: `durable-fetch worker` runs a started fetch to success and exits 0 on SIGTERM', async () => {
    let partner: PartnerServer | undefined;
    const taskQueue = `test-worker-${randomUUID()}`;
    const worker = spawnTs(['bin/durable-fetch.js', 'worker'], {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
      LOG_LEVEL: 'warn',
    });
    try {
      partner = await startPartner({ port: 0, recordCount: () => 75 });
      await createSource(db.prisma, 'proc-worker', partner.url);
      await worker.waitFor(/worker polling task queue/, 60_000);
      const started = await startFetch(
        { temporal: client, prisma: db.prisma, taskQueue, now: () => new Date('2026-11-29T12:00:00Z') },
        { sourceId: 'proc-worker', date: '2026-02-02', requestedBy: 'test' },
      );
      const result = await started.handle.result();
      assert.deepEqual(result, { status: 'succeeded', fetchRunId: result.fetchRunId, pages: 1, records: 75 });
      assert.equal(await worker.stop('SIGTERM', 30_000), 0, worker.output());
      assert.match(worker.output(), /worker stopped/);
    } finally {
      await worker.stop('SIGKILL', 5_000);
      await partner?.close();
    }
  });
});
