// Backup and restore (R12d), with real processes only: a Temporal dev server on SQLite, a cloned
// PostgreSQL database, real worker and publisher processes and the demo partner, whose own lists
// (records, applied events, submissions and its effects ledger) judge the outcome.
//
// 1. Both restored to the same moment while runs are in flight: Temporal's state is copied first
//    (SQLite online backup), PostgreSQL second (pg_dump), so PostgreSQL is never older than
//    Temporal: whatever happened between the two copies is a step PostgreSQL holds and Temporal
//    retries, which the idempotency records absorb — the crash-after-commit case.
// 2. PostgreSQL restored to an older point than Temporal: runs finished in Temporal after the dump;
//    what `reconcile` says, what `reconcile --stuck` settles, and the state after the repair.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { startFetch, type StartedFetch } from '../../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../../partner/server.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { prismaOn } from '../../db/client.ts';
import type { DevServer } from '../../worker/stack/temporal-dev-server.ts';
import { runState, type RunState, startStack, startTemporal, stateLine } from '../helpers/backup-stack.ts';
import {
  backupSqlite,
  dumpDatabase,
  ensureSqlite3,
  restoreDatabase,
  type RestoredDatabase,
} from '../helpers/backup-tools.ts';
import { detail, runCli } from '../helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { createSource } from '../helpers/deps.ts';
import { within } from '../helpers/process.ts';

const DATE = '2026-08-08';
/** Four pages of 50 per run. */
const RECORDS = 200;
const PAGES = RECORDS / 50;
/** Each records call of the partner takes this long: runs stay in flight for PAGES × this. */
const PAGE_DELAY_MS = 2_500;
/**
 * Bound on a run finishing after a restore: an activity in flight when Temporal's state was
 * copied is retried once its heartbeat (30 s) or start-to-close (≤ 2 min) timeout fires on the new
 * server, then the remaining pages; on a loaded 2-core machine, with ample slack.
 */
const FINISH_MS = 600_000;

const adminUrl = () => {
  const url = process.env.DF_TEST_PG_ADMIN_URL;
  assert.ok(url, 'test/run.ts sets DF_TEST_PG_ADMIN_URL');
  return url;
};

let dir: string;
let sqlite3: string;
const cleanups: (() => Promise<unknown>)[] = [];
const later = <T extends { drop?: () => Promise<void>; stop?: () => Promise<void> }>(thing: T): T => {
  cleanups.push(() => (thing.drop ?? thing.stop)?.() ?? Promise.resolve());
  return thing;
};

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'df-backup-'));
  sqlite3 = await ensureSqlite3((line) => console.log(`[backup-restore] ${line}`));
});
after(async () => {
  for (const fn of cleanups.reverse()) await fn().catch((err: unknown) => console.error(err));
  await rm(dir, { recursive: true, force: true });
});

/** A partner whose records calls are slow, and a run-submitting source per id on it. */
async function partnerWithSources(db: TestDatabase, sourceIds: readonly string[]): Promise<PartnerServer> {
  const partner = await startPartner({ port: 0, recordCount: () => RECORDS });
  cleanups.push(() => partner.close());
  for (const id of sourceIds) {
    await createSource(db.prisma, id, partner.url, {
      pageSize: 50,
      submitSummary: true,
      submitMaxProcessingMs: 2_000,
    });
    partner.faults.add({ sourceId: id, kind: 'delay', delayMs: PAGE_DELAY_MS, times: 10_000 });
  }
  return partner;
}

/** Polls `check` every 250 ms until it returns a value; fails after `ms` with `what`. */
async function until<T>(check: () => Promise<T | undefined>, ms: number, what: () => string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out after ${ms} ms waiting for ${what()}`);
    await sleep(250);
  }
}

/** Until every run has stored a page and none has finished: the runs are mid-way. */
async function midway(prisma: PrismaClient, sourceIds: readonly string[]): Promise<void> {
  await until(
    async () => {
      const runs = await prisma.fetchRun.findMany({ where: { sourceId: { in: [...sourceIds] } } });
      assert.ok(
        runs.every((r) => r.status !== 'succeeded'),
        'a run finished before the backup: the pages are not slow enough to catch runs in flight',
      );
      return runs.length === sourceIds.length && runs.every((r) => r.pagesStored >= 1) ? true : undefined;
    },
    // Each run's first page is one slow partner call away; the worker may still be starting.
    120_000,
    () => 'every run to store its first page',
  );
}

/** Until every run succeeded in PostgreSQL, its ledger is settled and the outbox is delivered. */
async function settled(prisma: PrismaClient, sourceIds: readonly string[], output: () => string) {
  await until(
    async () => {
      const runs = await prisma.fetchRun.findMany({
        where: { sourceId: { in: [...sourceIds] } },
        include: { downstreamActions: true },
      });
      const done = runs.every(
        (r) => r.status === 'succeeded' && r.downstreamActions.every((a) => a.state === 'confirmed'),
      );
      const pending = await prisma.outboxEvent.count({ where: { status: { not: 'published' } } });
      return runs.length === sourceIds.length && done && pending === 0 ? true : undefined;
    },
    FINISH_MS,
    () => `runs to succeed and the outbox to drain:\n${output().slice(-4000)}`,
  );
}

async function states(prisma: PrismaClient, partner: PartnerServer, sourceIds: readonly string[]) {
  partner.faults.clear(); // the partner's list is read at full speed
  return Promise.all(sourceIds.map((id) => runState(prisma, partner, id, DATE)));
}

/** What must hold of every run once the system has finished it. */
function assertWhole(s: RunState): void {
  const what = stateLine(s);
  assert.equal(s.status, 'succeeded', what);
  assert.equal(s.pagesStored, PAGES, what);
  assert.equal(s.rows, RECORDS, `one business row per record: ${what}`);
  assert.equal(s.distinctRows, s.rows, what);
  assert.ok(s.rowsMatchPartner, `the rows are the partner's list: ${what}`);
  assert.equal(s.recordsStored, RECORDS, what);
  assert.equal(s.eventSteps, s.events, `one outbox event per step: ${what}`);
  assert.equal(s.events, PAGES + 1, `a page event per page and one completion: ${what}`);
  assert.ok(s.allApplied, `every event reached the partner: ${what}`);
  assert.equal(s.applied, s.events, `the partner applied no event the outbox lacks: ${what}`);
  assert.equal(s.submits, 1, `one submission took effect at the partner: ${what}`);
  assert.equal(s.voids, 0, what);
  assert.equal(s.live.length, 1, what);
  assert.ok(!s.deadLetters.some((l) => l.startsWith('open ')), `no open dead letter: ${what}`);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;

function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = Date.now();
  return fn().then((value) => [value, Date.now() - started]);
}

async function startRuns(
  stack: { client: Client },
  prisma: PrismaClient,
  taskQueue: string,
  sourceIds: readonly string[],
): Promise<StartedFetch[]> {
  const ctx = { temporal: stack.client, prisma, taskQueue };
  return Promise.all(
    sourceIds.map((sourceId) => startFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' })),
  );
}

describe('backup and restore', () => {
  it('both restored to one moment while runs are in flight: every run finishes once, nothing twice', async (t) => {
    const sources = ['bkp-a', 'bkp-b', 'bkp-c'];
    const db = later(await useTestDatabase());
    const partner = await partnerWithSources(db, sources);
    const taskQueue = `test-backup-${randomUUID()}`;
    const temporalA = later(await startTemporal(path.join(dir, 'a', 'temporal.db')));
    const a = await startStack({ temporal: temporalA, databaseUrl: db.url, taskQueue, partner });
    cleanups.push(() => a.kill());
    const started = await startRuns(a, db.prisma, taskQueue, sources);
    await midway(db.prisma, sources);

    // Temporal first, PostgreSQL second: see the file's head.
    await mkdir(path.join(dir, 'backup'));
    const [sqliteBytes, sqliteMs] = await timed(() =>
      backupSqlite(sqlite3, path.join(dir, 'a', 'temporal.db'), path.join(dir, 'backup', 'temporal.db')),
    );
    const [dumpBytes, dumpMs] = await timed(() => dumpDatabase(db.url, path.join(dir, 'backup', 'pg.dump')));
    const atBackup = await db.prisma.fetchRun.findMany({ where: { sourceId: { in: sources } } });

    // Stack A is lost: processes killed, Temporal killed (its SIGKILL is the crash, stop() the reaping).
    await a.kill();
    process.kill(temporalA.pid, 'SIGKILL');
    await temporalA.stop();

    await mkdir(path.join(dir, 'b'));
    const [restored, restoreMs] = await timed(async () => {
      await copyFile(path.join(dir, 'backup', 'temporal.db'), path.join(dir, 'b', 'temporal.db'));
      return restoreDatabase(adminUrl(), path.join(dir, 'backup', 'pg.dump'));
    });
    later(restored);
    const prisma = prismaOn({ connectionString: restored.url });
    cleanups.push(() => prisma.$disconnect());
    const startedB = Date.now();
    const temporalB = later(await startTemporal(path.join(dir, 'b', 'temporal.db')));
    const b = await startStack({ temporal: temporalB, databaseUrl: restored.url, taskQueue, partner });
    cleanups.push(() => b.kill());
    const output = () => `${b.worker.output()}\n${b.publisher.output()}`;
    await within(
      Promise.all(started.map((s) => b.client.workflow.getHandle(s.workflowId).result())),
      FINISH_MS,
      () => `the restored runs to finish:\n${output().slice(-4000)}`,
    );
    await settled(prisma, sources, output);
    const finishMs = Date.now() - startedB;

    const after = await states(prisma, partner, sources);
    t.diagnostic(
      `backups: Temporal SQLite ${kib(sqliteBytes)} in ${seconds(sqliteMs)}, pg_dump ${kib(dumpBytes)} in ` +
        `${seconds(dumpMs)}; restore ${seconds(restoreMs)}; in flight at backup: ` +
        `${atBackup.map((r) => `${r.sourceId} ${r.pagesStored}/${PAGES} pages`).join(', ')}; ` +
        `${after.length} runs finished on the new stack ${seconds(finishMs)} after it started`,
    );
    for (const s of after) t.diagnostic(stateLine(s));
    for (const s of after) assertWhole(s);
    assert.equal(await prisma.deadLetter.count(), 0, 'no dead letter');
  });

  it("PostgreSQL restored to an older point than Temporal: reconcile --stuck finds every rolled-back run, dlq retry brings each back to the partner's list, no effect twice", async (t) => {
    const sources = ['bkp-old-a', 'bkp-old-b'];
    const db = later(await useTestDatabase());
    const partner = await partnerWithSources(db, sources);
    const taskQueue = `test-backup-old-${randomUUID()}`;
    const temporal: DevServer = later(await startTemporal());
    // A short lease, so that a restored row's lease has run out by the time it is looked at; the
    // workers' own sweep is off: the operator's `reconcile --stuck` is what is shown here.
    const workerEnv = { DURABLE_FETCH_LEASE_TTL_MS: '3000', DURABLE_FETCH_SWEEP_INTERVAL_MS: '0' };
    const c = await startStack({ temporal, databaseUrl: db.url, taskQueue, partner, workerEnv });
    cleanups.push(() => c.kill());
    const started = await startRuns(c, db.prisma, taskQueue, sources);
    await midway(db.prisma, sources);
    const dumpFile = path.join(dir, 'old.dump');
    const [dumpBytes] = await timed(() => dumpDatabase(db.url, dumpFile));
    // Temporal goes on: the runs finish there (and in the database the dump no longer matches).
    await within(
      Promise.all(started.map((s) => c.client.workflow.getHandle(s.workflowId).result())),
      FINISH_MS,
      () => `the runs to finish:\n${c.worker.output().slice(-4000)}`,
    );
    await settled(db.prisma, sources, () => c.worker.output());
    await c.kill();

    const [restored, restoreMs]: [RestoredDatabase, number] = await timed(() =>
      restoreDatabase(adminUrl(), dumpFile),
    );
    later(restored);
    const prisma = prismaOn({ connectionString: restored.url });
    cleanups.push(() => prisma.$disconnect());
    const d = await startStack({ temporal, databaseUrl: restored.url, taskQueue, partner, workerEnv });
    cleanups.push(() => d.kill());
    const before = await states(prisma, partner, sources);
    for (const s of before) t.diagnostic(`restored, before repair: ${stateLine(s)}`);
    for (const s of before) {
      assert.equal(s.status, 'running', `PostgreSQL is older: ${stateLine(s)}`);
      assert.ok(!s.rowsMatchPartner, `rows missing after the restore: ${stateLine(s)}`);
    }

    const reconcile = async (...args: string[]) => {
      const r = await runCli(['reconcile', ...args, '--json'], d.env, 120_000);
      t.diagnostic(
        `reconcile ${args.join(' ')} → exit ${r.code}: ${r.stdout.replace(/\s+/g, ' ').slice(0, 1500)}`,
      );
      return r;
    };
    await reconcile('--date', DATE);
    // The rows' leases run out 3 s after their last renewal before the dump, long gone by now.
    const stuck = await reconcile('--stuck');
    assert.equal(stuck.code, 0, detail(stuck));
    const letters = await prisma.deadLetter.findMany({ where: { status: 'open' } });
    assert.deepEqual(
      letters.map((l) => `${l.errorType}/${l.errorCode}`).sort(),
      sources.map(() => 'Internal/WORKFLOW_COMPLETED_UNRECORDED'),
      'each run is settled as its workflow ended: completed, unrecorded',
    );
    // The repair: each letter retried runs its key again (a new execution beside the completed
    // one), which re-fetches the pages the database lost and looks up the submission its ledger
    // forgot instead of submitting again.
    for (const letter of letters) {
      const r = await runCli(['dlq', 'retry', letter.id], d.env, 120_000);
      t.diagnostic(`dlq retry → exit ${r.code}: ${(r.stdout + r.stderr).trim().slice(0, 300)}`);
      assert.equal(r.code, 0, detail(r));
    }
    for (const s of started) {
      const latest = await d.client.workflow.getHandle(s.workflowId).describe();
      assert.notEqual(latest.runId, s.runId, `a new execution of ${s.workflowId}`);
    }
    await settled(prisma, sources, () => d.worker.output());
    const after = await states(prisma, partner, sources);
    for (const s of after) t.diagnostic(`after repair: ${stateLine(s)}`);
    for (const s of after) assertWhole(s);
    const repaired = await reconcile('--date', DATE);
    assert.equal(repaired.code, 0, detail(repaired));
    assert.equal((JSON.parse(repaired.stdout) as { mismatches: number }).mismatches, 0, detail(repaired));
    const left = await states(prisma, partner, sources);
    for (const s of left) t.diagnostic(`at the end: ${stateLine(s)}`);
    t.diagnostic(
      `PostgreSQL restored to an older point: dump ${kib(dumpBytes)}, restore ${seconds(restoreMs)}`,
    );
  });
});
