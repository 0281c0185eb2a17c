// The engine's statements skip the Prisma client (db/transaction.ts): inside a Prisma transaction
// they go to the transaction's own connection through node-postgres, outside one to the client's
// pool. What must hold, on real PostgreSQL: the statements are part of the Prisma transaction (one
// commit, one rollback); their values read and write as Prisma's would, whatever the process's
// time zone; a lent connection refuses to send once Prisma has ended the transaction (its timeout
// included), so nothing can run outside it or inside another transaction on a reused connection;
// and their failures are classified like Prisma's (R7).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { PrismaPg } from '@prisma/adapter-pg';
import { ApplicationFailure } from '@temporalio/common';
import { classify } from '../activities/errors.ts';
import { DriverStatementError } from '../db/driver-error.ts';
import { engineSql, inTransaction, type EngineSql } from '../db/transaction.ts';
import { PrismaClient } from '../prisma/generated/client.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';

let db: TestDatabase;

before(async () => {
  db = await useTestDatabase();
  await db.prisma.$executeRawUnsafe(
    'CREATE TABLE scratch (id int PRIMARY KEY, at timestamp(3), at_tz timestamptz, n bigint, doc jsonb, tags text[])',
  );
});
after(async () => db?.drop());

async function count(): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM scratch`;
  return row?.n ?? -1;
}

/** Classifies `err` as an activity would and returns its type and code. */
function classified(err: unknown): { type: string | undefined | null; code: unknown } {
  const failure = classify(err, 'storePage');
  assert.ok(failure instanceof ApplicationFailure);
  return { type: failure.type, code: (failure.details as [{ code?: unknown }] | undefined)?.[0]?.code };
}

void describe('engine statements through the driver', () => {
  void it('inside a Prisma transaction they run on its connection: one commit, one rollback', async () => {
    await db.prisma.$executeRaw`TRUNCATE scratch`;
    const ids = await inTransaction(db.prisma, async (tx, sql) => {
      assert.notEqual(sql, tx, 'a client of prismaOn lends its transaction connection');
      await sql.$executeRaw`INSERT INTO scratch (id) VALUES (1)`;
      await tx.$executeRaw`INSERT INTO scratch (id) VALUES (2)`;
      const [a] = await sql.$queryRaw<{ x: bigint }[]>`SELECT txid_current() AS x`;
      const [b] = await tx.$queryRaw<{ x: bigint }[]>`SELECT txid_current() AS x`;
      return [a?.x, b?.x];
    });
    assert.equal(ids[0], ids[1], 'the same transaction id on both');
    assert.equal(await count(), 2);

    await assert.rejects(
      inTransaction(db.prisma, async (tx, sql) => {
        await sql.$executeRaw`INSERT INTO scratch (id) VALUES (3)`;
        await tx.$executeRaw`INSERT INTO scratch (id) VALUES (4)`;
        throw new Error('refused');
      }),
      /refused/,
    );
    assert.equal(await count(), 2, 'the rollback took the driver-sent row with it');
  });

  void it('values read and write as through Prisma, in any time zone of the process', async () => {
    await db.prisma.$executeRaw`TRUNCATE scratch`;
    const zone = process.env.TZ;
    // Far from UTC, so that a Date sent or read in local time would show.
    process.env.TZ = 'Pacific/Kiritimati';
    try {
      const at = new Date('2026-12-04T10:11:12.345Z');
      const doc = { a: [1, 'two'], b: null };
      await inTransaction(db.prisma, async (_tx, sql) => {
        await sql.$executeRaw`INSERT INTO scratch (id, at, at_tz, n, doc, tags)
          VALUES (1, ${at}, ${at}, ${2n ** 40n}, ${JSON.stringify(doc)}::jsonb, ${['x', 'y']}::text[])`;
      });
      await db.prisma.$executeRaw`INSERT INTO scratch (id, at, at_tz, n, doc, tags)
        VALUES (2, ${at}, ${at}, ${2n ** 40n}, ${JSON.stringify(doc)}::jsonb, ${['x', 'y']}::text[])`;
      const read = (q: EngineSql) =>
        q.$queryRaw`SELECT id, at, at_tz, n, doc, tags, at::text AS stored FROM scratch ORDER BY id`;
      const viaPrisma = await read(db.prisma);
      const viaDriver = await inTransaction(db.prisma, async (_tx, sql) => read(sql));
      assert.deepEqual(viaDriver, viaPrisma, 'the same rows, the same JS types');
      const [first, second] = viaPrisma as { at: Date; stored: string }[];
      assert.equal(first?.stored, second?.stored, 'the driver wrote the timestamp Prisma writes');
      assert.equal(first?.at.toISOString(), at.toISOString());
      assert.deepEqual(await read(engineSql(db.prisma)), viaPrisma, 'and outside a transaction, on the pool');
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  void it('a lent connection sends nothing once Prisma ended the transaction (timeout, commit)', async () => {
    await db.prisma.$executeRaw`TRUNCATE scratch`;
    let kept: EngineSql | undefined;
    const late = inTransaction(
      db.prisma,
      async (tx, sql) => {
        kept = sql;
        await sql.$executeRaw`INSERT INTO scratch (id) VALUES (1)`;
        // Wait for Prisma's own timeout to end the transaction: its client refuses from then on.
        for (;;) {
          const open = await tx.$queryRaw`SELECT 1`.then(
            () => true,
            () => false,
          );
          if (!open) break;
          await sleep(50);
        }
        await sql.$executeRaw`INSERT INTO scratch (id) VALUES (2)`;
      },
      { timeout: 300 },
    );
    const err: unknown = await late.catch((e: unknown) => e);
    assert.ok(err instanceof Error, 'the transaction failed');
    assert.equal(await count(), 0, 'nothing of it committed, nor ran outside it');
    // The pool's connection is someone else's now: the kept handle must not reach it.
    await assert.rejects(
      kept!.$executeRaw`INSERT INTO scratch (id) VALUES (3)`,
      (e: unknown) => e instanceof DriverStatementError && e.code === 'TRANSACTION_ENDED',
    );
    const committed = await inTransaction(db.prisma, (_tx, sql) => Promise.resolve(sql));
    await assert.rejects(committed.$executeRaw`INSERT INTO scratch (id) VALUES (4)`, DriverStatementError);
    assert.equal(await count(), 0);
    const refused = await kept!.$executeRaw`INSERT INTO scratch (id) VALUES (5)`.catch((e: unknown) => e);
    assert.deepEqual(classified(refused), { type: 'DatabaseUnavailable', code: 'TRANSACTION_ENDED' });
  });

  void it('failures classify as Prisma’s: a constraint is a bug, a lock timeout or a lost session an outage', async () => {
    await db.prisma.$executeRaw`TRUNCATE scratch`;
    await db.prisma.$executeRaw`INSERT INTO scratch (id) VALUES (1)`;
    const unique = await inTransaction(
      db.prisma,
      (_tx, sql) => sql.$executeRaw`INSERT INTO scratch (id) VALUES (1)`,
    ).catch((e: unknown) => e);
    assert.ok(unique instanceof DriverStatementError);
    assert.equal(classified(unique).type, 'Internal');

    // A row held by another session past lock_timeout: SQLSTATE 55P03.
    const holding = await inTransaction(db.prisma, async (_tx, sql) => {
      await sql.$queryRaw`SELECT id FROM scratch WHERE id = 1 FOR UPDATE`;
      return inTransaction(db.prisma, async (_tx2, sql2) => {
        await sql2.$executeRaw`SET LOCAL lock_timeout = '50ms'`;
        return sql2.$queryRaw`SELECT id FROM scratch WHERE id = 1 FOR UPDATE`;
      }).catch((e: unknown) => e);
    });
    assert.deepEqual(classified(holding), { type: 'DatabaseUnavailable', code: '55P03' });

    // The session ended under the transaction (an administrator, a failover).
    const ended = await inTransaction(db.prisma, async (_tx, sql) => {
      const [me] = await sql.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      await engineSql(db.prisma).$queryRaw`SELECT pg_terminate_backend(${me?.pid}::int)`;
      return sql.$queryRaw`SELECT 1`;
    }).catch((e: unknown) => e);
    assert.equal(classified(ended).type, 'DatabaseUnavailable', String(ended));
  });

  void it('a client on another adapter lends nothing: the statements go through Prisma', async () => {
    const plain = new PrismaClient({ adapter: new PrismaPg({ connectionString: db.url, max: 2 }) });
    try {
      assert.equal(engineSql(plain), plain);
      const same = await inTransaction(plain, (tx, sql) => Promise.resolve(sql === tx));
      assert.equal(same, true);
    } finally {
      await plain.$disconnect();
    }
  });
});
