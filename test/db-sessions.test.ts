// The database wiring of long-running processes (db/client.ts) on real PostgreSQL: bounded
// sessions (a frozen transaction cannot hold a run's row lock without limit, a lock wait fails
// inside its activity's attempt), a pool sized from the worker's slots, and a connect
// timeout that makes an unreachable database fail fast with a retryable error.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { classify } from '../activities/errors.ts';
import { ApplicationFailure } from '@temporalio/common';
import { idempotencyKeyFor, workflowIdFor } from '../contract/business-key.ts';
import { loadConfig } from '../runtime/config.ts';
import {
  CLI_POOL_SIZE,
  CONNECT_TIMEOUT_MS,
  STATEMENT_TIMEOUT_MS,
  createPrisma,
  poolConfig,
  type PrismaClient,
} from '../db/client.ts';
import { publisherPool, WORKER_BACKGROUND, workerPool } from '../worker/pool-size.ts';
import { SESSION_BOUNDS } from '../db/limits.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { within } from './helpers/process.ts';

let db: TestDatabase;
const opened: PrismaClient[] = [];

before(async () => {
  db = await useTestDatabase();
});
after(async () => {
  for (const p of opened) await p.$disconnect().catch(() => undefined);
  await db?.drop();
});

function open(options: Parameters<typeof createPrisma>[1]): PrismaClient {
  const prisma = createPrisma(db.url, options);
  opened.push(prisma);
  return prisma;
}

/** The session's value of each bound, in milliseconds (pg_settings' unit for both). */
async function bounds(prisma: PrismaClient): Promise<Record<string, number>> {
  const rows = await prisma.$queryRaw<{ name: string; setting: string; unit: string }[]>`
    SELECT name, setting, unit FROM pg_settings
     WHERE name IN ('lock_timeout', 'idle_in_transaction_session_timeout') ORDER BY name`;
  for (const r of rows) assert.equal(r.unit, 'ms');
  return Object.fromEntries(rows.map((r) => [r.name, Number(r.setting)]));
}

/** The failure type an activity would throw for `err`. */
function typeOf(err: unknown): string | null | undefined {
  const f = classify(err, 'storePage');
  return f instanceof ApplicationFailure ? f.type : undefined;
}

async function insertRun(sourceId: string): Promise<string> {
  await createSource(db.prisma, sourceId, 'http://127.0.0.1:9');
  const key = { jobType: 'fetch-records' as const, sourceId, businessDate: '2026-03-03' };
  const run = await db.prisma.fetchRun.create({
    data: {
      jobType: key.jobType,
      sourceId,
      businessDate: new Date('2026-03-03T00:00:00Z'),
      payload: { sourceId },
      idempotencyKey: idempotencyKeyFor(key),
      status: 'running',
      scheduledAt: new Date(),
      correlationId: randomUUID(),
      workflowId: workflowIdFor(key),
    },
  });
  return run.id;
}

describe('database sessions', () => {
  it('db-sessions: worker and publisher sessions report lock_timeout and idle_in_transaction_session_timeout; a command’s do not', async () => {
    const expected = {
      idle_in_transaction_session_timeout: SESSION_BOUNDS.idleInTransactionTimeoutMs,
      lock_timeout: SESSION_BOUNDS.lockTimeoutMs,
    };
    assert.deepEqual(await bounds(open(workerPool(loadConfig({}), 0))), expected);
    assert.deepEqual(await bounds(open(publisherPool())), expected);
    const shown = await open({ max: 1, bounded: true }).$queryRaw<
      { lock_timeout: string }[]
    >`SHOW lock_timeout`;
    assert.deepEqual(shown, [{ lock_timeout: '5s' }]);
    assert.deepEqual(await bounds(open({ max: CLI_POOL_SIZE })), {
      idle_in_transaction_session_timeout: 0,
      lock_timeout: 0,
    });
  });

  it(
    'db-sessions: a session frozen inside a transaction holding a fetch_run row lock is ended by the server; another worker then gets the lock',
    {
      // Unbounded sessions would wait for ever: fail instead (10 attempts of a 5 s lock wait at most).
      timeout: 120_000,
    },
    async () => {
      const runId = await insertRun('dbs-frozen');
      const frozen = open({ max: 1, bounded: true });
      const other = open({ max: 1, bounded: true });
      let thaw!: () => void;
      const gate = new Promise<void>((resolve) => (thaw = resolve));
      let lockTaken!: (pid: number) => void;
      const held = new Promise<number>((resolve) => (lockTaken = resolve));
      // A storePage whose process froze after taking the run's row lock: Prisma's own timer would
      // roll back a live one, a frozen process cannot, so it is set far out of the way.
      const frozenTx = frozen.$transaction(
        async (tx) => {
          const [me] = await tx.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
          await tx.$executeRaw`UPDATE fetch_run SET records_stored = 999 WHERE id = ${runId}::uuid`;
          lockTaken(me!.pid);
          await gate;
          await tx.$queryRaw`SELECT 1`;
        },
        { timeout: 600_000 },
      );
      const frozenEnd = frozenTx.then(
        () => undefined,
        (err: unknown) => err as Error,
      );
      const pid = await held;

      // The other worker's attempts, as Temporal would retry them: each waits at most lock_timeout.
      const failures: unknown[] = [];
      let locked = false;
      for (let attempt = 0; attempt < 10 && !locked; attempt++) {
        try {
          await other.$transaction(async (tx) => {
            await tx.$queryRaw`SELECT id FROM fetch_run WHERE id = ${runId}::uuid FOR UPDATE`;
          });
          locked = true;
        } catch (err) {
          failures.push(err);
        }
      }
      assert.ok(locked, `the other session got the row lock (failures: ${failures.map(String).join('; ')})`);
      assert.ok(failures.length >= 1, 'a wait first gave up at lock_timeout');
      for (const f of failures) assert.equal(typeOf(f), 'DatabaseUnavailable', String(f));

      const alive = await db.prisma.$queryRaw<unknown[]>`SELECT 1 FROM pg_stat_activity WHERE pid = ${pid}`;
      assert.equal(alive.length, 0, 'the server ended the frozen session');
      const row = await db.prisma.fetchRun.findUniqueOrThrow({ where: { id: runId } });
      assert.notEqual(row.recordsStored, 999, "the frozen transaction's write was rolled back");

      // The frozen process wakes up: its transaction is gone, with a retryable error.
      thaw();
      const err = await frozenEnd;
      assert.ok(err, 'the frozen transaction cannot commit');
      assert.equal(typeOf(err), 'DatabaseUnavailable', String(err));
    },
  );

  it('db-sessions: the worker pool holds its activity, local-activity and downstream slots plus the background connections, no more', async () => {
    assert.equal(loadConfig({}).worker.activitySlots, 20);
    const config = loadConfig({ DURABLE_FETCH_WORKER_ACTIVITY_SLOTS: '2' });
    const pool = workerPool(config, 1);
    // 2 activity slots, as many local ones (the database steps), 1 downstream slot.
    assert.deepEqual(pool, { max: 5 + WORKER_BACKGROUND, bounded: true });
    assert.deepEqual(poolConfig(db.url, pool), {
      connectionString: db.url,
      // Every session in the engine's schema first, then the application's (db/pool-config.ts).
      options: '-c search_path=durable_fetch,public',
      max: 5 + WORKER_BACKGROUND,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      lock_timeout: SESSION_BOUNDS.lockTimeoutMs,
      idle_in_transaction_session_timeout: SESSION_BOUNDS.idleInTransactionTimeoutMs,
      query_timeout: STATEMENT_TIMEOUT_MS,
    });
    // One more transaction than the pool holds, all at once: they share exactly `max` sessions.
    const prisma = open(pool);
    const pids = await Promise.all(
      Array.from({ length: pool.max + 1 }, () =>
        prisma.$transaction(async (tx) => {
          const [row] = await tx.$queryRaw<
            { pid: number }[]
          >`SELECT pg_backend_pid() AS pid, pg_sleep(0.5)::text AS slept`;
          return row!.pid;
        }),
      ),
    );
    assert.equal(new Set(pids).size, pool.max);
  });

  it('db-sessions: a database that accepts the connection but never answers fails fast with a retryable error', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket)); // accepts, never says a word
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    assert.ok(address && typeof address === 'object');
    const prisma = createPrisma(`postgres://postgres@127.0.0.1:${address.port}/nowhere`, {
      max: 1,
      bounded: true,
    });
    opened.push(prisma);
    try {
      // Without a connect timeout this would wait forever; the bound only turns a hang into a failure.
      const err = await within(
        prisma.$queryRaw`SELECT 1`.then(
          () => assert.fail('a silent server cannot answer'),
          (e: unknown) => e,
        ),
        CONNECT_TIMEOUT_MS * 6,
        () => 'the query to fail on the connect timeout',
      );
      assert.equal(typeOf(err), 'DatabaseUnavailable', String(err));
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
