// The engine through PgBouncer in transaction-pooling mode (issue 40, item 4): Debian's pgbouncer
// (installed by scripts/pgbouncer.ts when missing) in front of the test PostgreSQL, with two server
// connections per database, so that transactions of many clients really share sessions. With
// DURABLE_FETCH_DB_POOLING=transaction nothing is kept in a session between transactions: no
// named statements, no start-up parameters, the session bounds set in each transaction, the
// search_path from the role (db/connection.ts, docs/database.md). Migrations go to
// DIRECT_DATABASE_URL. Without the setting, a process refuses the pooler in one line.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as PgClient, escapeIdentifier } from 'pg';
import type { Client } from '@temporalio/client';
import { codeOf } from '../activities/errors.ts';
import { Prisma } from '../prisma/generated/client.ts';
import { startFetch } from '../client/start-fetch.ts';
import { createPrisma, type PrismaClient } from '../db/client.ts';
import { engineSql, inTransaction } from '../db/transaction.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { assertOneLineError, detail, runCli } from './helpers/cli.ts';
import { useEmptyDatabase, useTestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { waitFor } from './helpers/outbox.ts';
import { startPgBouncer, type PgBouncer } from './helpers/pgbouncer.ts';
import { spawnTs, spawnWorker, type Spawned, within } from './helpers/process.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

const POOLED = { DURABLE_FETCH_DB_POOLING: 'transaction' } as const;
const RECORDS = 120;

let bouncer: PgBouncer;
let db: { url: string; name: string; drop: () => Promise<void> };
/** `db` through PgBouncer. */
let pooled: string;

/** Runs `sql` on the test server's maintenance database. */
async function admin(sql: string): Promise<void> {
  const client = new PgClient({ connectionString: process.env.DF_TEST_PG_ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** What every engine session through the pooler needs from the database: the engine's search_path. */
const engineSearchPath = (name: string) =>
  admin(`ALTER DATABASE ${escapeIdentifier(name)} SET search_path = durable_fetch, public`);

before(async () => {
  const adminUrl = new URL(process.env.DF_TEST_PG_ADMIN_URL ?? '');
  [bouncer, db] = await Promise.all([
    startPgBouncer({
      server: { host: adminUrl.hostname, port: Number(adminUrl.port || 5432) },
      poolMode: 'transaction',
      defaultPoolSize: 2,
      users: [decodeURIComponent(adminUrl.username || 'postgres')],
    }),
    useEmptyDatabase(),
  ]);
  await engineSearchPath(db.name);
  pooled = bouncer.via(db.url);
});

after(async () => {
  await db?.drop();
  await bouncer?.stop();
});

void describe('PgBouncer in transaction-pooling mode', () => {
  it('pgbouncer: migrate refuses a transaction pooler without DIRECT_DATABASE_URL in one line, and applies the migrations with it', async () => {
    const refused = await runCli(['migrate'], { DATABASE_URL: pooled, ...POOLED });
    assertOneLineError(refused, /session-level advisory lock.*set DIRECT_DATABASE_URL/);
    console.log(`  ${refused.stderr.trim()}`);
    const applied = await runCli(['migrate'], {
      DATABASE_URL: pooled,
      DIRECT_DATABASE_URL: db.url,
      ...POOLED,
    });
    assert.equal(applied.code, 0, detail(applied));
    assert.match(applied.stdout, /applied \d+ migration\(s\)/, detail(applied));
  });

  it('pgbouncer: without DURABLE_FETCH_DB_POOLING=transaction a command refuses the pooler in one line naming the setting', async () => {
    for (const args of [['runs', 'list'], ['status']]) {
      const result = await runCli(args, { DATABASE_URL: pooled });
      assertOneLineError(
        result,
        /refused the connection's start-up parameters \(unsupported startup parameter: .*\): .*set DURABLE_FETCH_DB_POOLING=transaction/,
      );
      console.log(`  ${args.join(' ')}: ${result.stderr.trim()}`);
    }
    const worker = spawnWorker({
      DATABASE_URL: pooled,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: `test-pgbouncer-refused-${Date.now()}`,
      LOG_LEVEL: 'warn',
    });
    try {
      await worker.waitFor(
        /durable-fetch: .*refused the connection's start-up parameters .*set DURABLE_FETCH_DB_POOLING=transaction/,
        60_000,
      );
    } finally {
      await worker.stop('SIGKILL', 5_000);
    }
  });

  it("pgbouncer: a database whose role has not the engine's search_path is refused in one line naming it", async () => {
    const other = await useTestDatabase();
    try {
      const result = await runCli(['runs', 'list'], { DATABASE_URL: bouncer.via(other.url), ...POOLED });
      assertOneLineError(
        result,
        /not on the search_path .*ALTER ROLE <user> IN DATABASE <db> SET search_path = durable_fetch, public/,
      );
      console.log(`  ${result.stderr.trim()}`);
    } finally {
      await other.drop();
    }
  });

  it('pgbouncer: every transaction gets lock_timeout and idle_in_transaction_session_timeout, which the shared sessions do not keep', async () => {
    const prisma = createPrisma(pooled, {
      max: 4,
      bounded: true,
      pooling: 'transaction',
      preparedStatements: true,
    });
    const holder = new PgClient({ connectionString: db.url });
    await holder.connect();
    try {
      const settings = () => Prisma.sql`SELECT current_setting('lock_timeout') AS lock,
        current_setting('idle_in_transaction_session_timeout') AS idle`;
      type Row = { lock: string; idle: string };
      const inside = await inTransaction(prisma, (_tx, q) => q.$queryRaw<Row[]>(settings()));
      assert.deepEqual(inside, [{ lock: '5s', idle: '10s' }]);
      // The same server sessions, between transactions: nothing set on them (SET LOCAL).
      const outside = await engineSql(prisma).$queryRaw<Row[]>(settings());
      assert.deepEqual(outside, [{ lock: '0', idle: '0' }]);
      // A row lock held elsewhere: the pooled transaction gives up at lock_timeout (55P03).
      await createSource(prisma, 'locked-src', 'http://127.0.0.1:9');
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM durable_fetch.source WHERE id = 'locked-src' FOR UPDATE");
      const waited = await inTransaction(
        prisma,
        (_tx, q) => q.$executeRaw`UPDATE source SET name = 'x' WHERE id = 'locked-src'`,
      ).then(
        () => undefined,
        (err: unknown) => err,
      );
      assert.equal(codeOf(waited), '55P03', String(waited));
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
      await prisma.$disconnect();
    }
  });
});

void describe('the engine through PgBouncer in transaction-pooling mode', () => {
  let partner: PartnerServer;
  let client: Client;
  let prisma: PrismaClient;
  let worker: Spawned;
  let publisher: Spawned;
  const taskQueue = `test-pgbouncer-${Date.now()}`;
  const SOURCES = ['pgb-a', 'pgb-b', 'pgb-c'];
  const DATES = ['2026-11-18', '2026-11-19'];

  before(async () => {
    // Migrated by the first test of the file; again here so that this part runs alone too.
    const migrate = await runCli(['migrate'], {
      DATABASE_URL: pooled,
      DIRECT_DATABASE_URL: db.url,
      ...POOLED,
    });
    assert.equal(migrate.code, 0, detail(migrate));
    [partner, client] = await Promise.all([
      startPartner({ port: 0, recordCount: () => RECORDS }),
      testClient(),
    ]);
    prisma = createPrisma(pooled, { max: 4, pooling: 'transaction' });
    const env = {
      DATABASE_URL: pooled,
      ...POOLED,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
      PARTNER_PAGE_LIMIT: '50',
      LOG_LEVEL: 'warn',
    };
    worker = spawnWorker(env);
    publisher = spawnTs(['bin/durable-fetch.js', 'publisher'], {
      ...env,
      DURABLE_FETCH_WEBHOOK_URL: `${partner.url}/events`,
    });
    await worker.waitFor(/worker polling task queue/, 60_000);
  });

  after(async () => {
    await Promise.all([worker?.stop('SIGKILL', 5_000), publisher?.stop('SIGKILL', 5_000)]);
    await prisma?.$disconnect();
    await client?.connection.close();
    await partner?.close();
  });

  it('pgbouncer: concurrent runs store their records, the publisher delivers their events, and a failing run is dead-lettered', async () => {
    for (const id of [...SOURCES, 'pgb-denied'])
      await createSource(prisma, id, partner.url, { pageSize: 50 });
    partner.faults.add({ sourceId: 'pgb-denied', kind: 'status', status: 401, times: 5 });
    const ctx = { temporal: client, prisma, taskQueue, now: () => new Date('2026-11-30T12:00:00Z') };
    const starts = [
      ...SOURCES.flatMap((sourceId) => DATES.map((date) => ({ sourceId, date }))),
      { sourceId: 'pgb-denied', date: DATES[0]! },
    ];
    const runs = await Promise.all(starts.map((s) => startFetch(ctx, { ...s, requestedBy: 'test' })));
    const outcomes = await within(
      Promise.all(
        runs.map((r) =>
          r.handle.result().then(
            (v) => v,
            (err: unknown) => err,
          ),
        ),
      ),
      180_000,
      () => `${worker.output()}\n${publisher.output()}`,
    );
    const output = () => `${worker.output()}\n${publisher.output()}\n${outcomes.map(String).join('\n')}`;
    for (const sourceId of SOURCES) {
      assert.equal(
        await prisma.fetchedRecord.count({ where: { sourceId } }),
        RECORDS * DATES.length,
        output(),
      );
    }
    const rows = await prisma.fetchRun.findMany({ select: { sourceId: true, status: true } });
    assert.equal(
      rows.filter((r) => r.status === 'succeeded').length,
      SOURCES.length * DATES.length,
      output(),
    );
    assert.deepEqual(
      rows.filter((r) => r.sourceId === 'pgb-denied').map((r) => r.status),
      ['dead_lettered'],
    );
    assert.equal(
      await prisma.deadLetter.count({ where: { sourceId: 'pgb-denied', errorType: 'PermissionDenied' } }),
      1,
    );
    const events = await prisma.outboxEvent.count();
    assert.ok(events > 0, 'the runs wrote outbox events');
    await waitFor(
      async () => (await prisma.outboxEvent.count({ where: { status: 'published' } })) === events,
      'every outbox event published through the pooler',
      60_000,
    );
    assert.equal(partner.events.list().length, events, output());
    assert.doesNotMatch(output(), /prepared statement .* does not exist/);
  });
});
