// R12 (crash at each step), R5: a transaction whose connection is lost before or at COMMIT — the
// database stopped hard (SIGQUIT: an immediate shutdown, then crash recovery, as a failover or a
// host reboot looks) while the transaction was open — fails as an outage (DatabaseUnavailable,
// retried), never as a bug (Internal: a dead letter); so does a connection a proxy in front of a dead
// server accepts and drops. On a PostgreSQL the test owns (embedded).
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { databaseOutageCode } from '../activities/database-errors.ts';
import { engineSql, inTransaction } from '../db/transaction.ts';
import { prismaOn } from '../db/client.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../worker/stack/postgres.ts';
import { freePort, isPidAlive } from '../runtime/process-utils.ts';
import { startPgProxy } from './helpers/pg-proxy.ts';
import { engineConnection } from '../db/pool-config.ts';

let tmp: string;
let dataDir: string;
let port: number;
let server: EmbeddedPostgres;

const start = () => startEmbeddedPostgres({ dataDir, port });

async function query(url: string, text: string): Promise<unknown[]> {
  const client = new pg.Client(engineConnection(url));
  await client.connect();
  try {
    return (await client.query(text)).rows as unknown[];
  } finally {
    await client.end();
  }
}

/** Stops the server as a crash would (SIGQUIT to the postmaster) and waits until it is gone. */
async function stopHard(): Promise<void> {
  const pid = Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  process.kill(pid, 'SIGQUIT');
  for (let i = 0; i < 300 && isPidAlive(pid); i++) await sleep(100);
  assert.ok(!isPidAlive(pid), 'the postmaster is gone');
}

before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'df-commit-loss-'));
  dataDir = path.join(tmp, 'data');
  port = await freePort();
  server = await start();
  await query(server.adminUrl, 'CREATE DATABASE commit_loss');
  await query(server.urlFor('commit_loss'), 'CREATE TABLE kept (id int PRIMARY KEY)');
});
after(async () => {
  await server?.stop();
  await rm(tmp, { recursive: true, force: true });
});

describe('a transaction that loses its connection before COMMIT', () => {
  test('the database stopped hard while the transaction is open: an outage, nothing committed, the pool recovers', async () => {
    const prisma = prismaOn({ connectionString: server.urlFor('commit_loss'), max: 2 });
    try {
      const err = await inTransaction(prisma, async (tx, sql) => {
        await sql.$executeRaw`INSERT INTO kept VALUES (1)`;
        await tx.$executeRaw`INSERT INTO kept VALUES (2)`;
        await stopHard();
      }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(err instanceof Error, 'the transaction failed');
      console.log(
        `# ${err.constructor.name}: ${err.message}; code ${JSON.stringify((err as { code?: unknown }).code)}`,
      );
      assert.ok(databaseOutageCode(err), `an outage, not a bug: ${err.constructor.name} ${err.message}`);

      server = await start();
      assert.deepEqual(
        await query(server.urlFor('commit_loss'), 'SELECT id FROM kept'),
        [],
        'nothing committed',
      );
      await inTransaction(prisma, async (_tx, sql) => {
        await sql.$executeRaw`INSERT INTO kept VALUES (3)`;
      });
      assert.deepEqual(await query(server.urlFor('commit_loss'), 'SELECT id FROM kept'), [{ id: 3 }]);
    } finally {
      await prisma.$disconnect();
    }
  });

  for (const via of ['prisma', 'driver'] as const) {
    test(`the database stopped hard while the transaction is idle, then a statement through ${via === 'prisma' ? "Prisma's transaction client" : 'the lent connection'}: an outage`, async () => {
      const prisma = prismaOn({ connectionString: server.urlFor('commit_loss'), max: 2 });
      try {
        const err = await inTransaction(prisma, async (tx, sql) => {
          await tx.$executeRaw`INSERT INTO kept VALUES (10)`;
          await stopHard();
          await (via === 'prisma' ? tx : sql).$executeRaw`INSERT INTO kept VALUES (11)`;
        }).then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.ok(err instanceof Error, 'the transaction failed');
        assert.ok(databaseOutageCode(err), `an outage, not a bug: ${err.constructor.name} ${err.message}`);
        server = await start();
        assert.deepEqual(await query(server.urlFor('commit_loss'), 'SELECT id FROM kept WHERE id >= 10'), []);
      } finally {
        await prisma.$disconnect();
      }
    });
  }

  test('the database gone behind a proxy that accepts and then drops connections (a pooler, a load balancer): every way in is an outage', async () => {
    const proxy = await startPgProxy({ host: '127.0.0.1', port });
    const prisma = prismaOn({ connectionString: proxy.via(server.urlFor('commit_loss')), max: 2 });
    try {
      await stopHard();
      const ways: [string, () => Promise<unknown>][] = [
        ['a transaction', () => inTransaction(prisma, (tx) => tx.$executeRaw`INSERT INTO kept VALUES (20)`)],
        ['an engine statement', () => engineSql(prisma).$executeRaw`INSERT INTO kept VALUES (21)`],
        ['a Prisma query', () => prisma.$executeRaw`INSERT INTO kept VALUES (22)`],
      ];
      for (const [way, run] of ways) {
        const err = await run().then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.ok(err instanceof Error, `${way} failed`);
        assert.ok(
          databaseOutageCode(err),
          `${way}: an outage, not a bug: ${err.constructor.name} ${err.message}`,
        );
      }
      server = await start();
      await inTransaction(prisma, (tx) => tx.$executeRaw`INSERT INTO kept VALUES (23)`);
      assert.deepEqual(await query(server.urlFor('commit_loss'), 'SELECT id FROM kept WHERE id >= 20'), [
        { id: 23 },
      ]);
    } finally {
      await prisma.$disconnect();
      await proxy.close();
    }
  });

  test('a server that stops answering mid-transaction: the statement times out as an outage, nothing more is sent on that connection, and it is closed, not reused', async () => {
    const proxy = await startPgProxy({ host: '127.0.0.1', port });
    const url = proxy.via(server.urlFor('commit_loss'));
    const prisma = prismaOn({ connectionString: url, max: 1, query_timeout: 1_000 });
    try {
      let firstPid: number | undefined;
      const err = await inTransaction(prisma, async (tx, sql) => {
        const [row] = await sql.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
        firstPid = row?.pid;
        await sql.$executeRaw`INSERT INTO kept VALUES (30)`;
        proxy.hang();
        await tx.$executeRaw`INSERT INTO kept VALUES (31)`;
      }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(err instanceof Error, 'the transaction failed');
      assert.ok(databaseOutageCode(err), `an outage, not a bug: ${err.constructor.name} ${err.message}`);
      proxy.resume();
      // The pool's one connection: a fresh session, not the one still owing an answer.
      const [row] = await inTransaction(prisma, async (_tx, sql) => {
        await sql.$executeRaw`INSERT INTO kept VALUES (32)`;
        return sql.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      });
      assert.notEqual(row?.pid, firstPid, 'the failed connection was closed, not reused');
      assert.deepEqual(
        await query(server.urlFor('commit_loss'), 'SELECT id FROM kept WHERE id >= 30 ORDER BY id'),
        [{ id: 32 }],
        'nothing of the failed transaction committed',
      );
    } finally {
      proxy.resume();
      await prisma.$disconnect();
      await proxy.close();
    }
  });
});
