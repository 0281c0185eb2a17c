// PostgreSQL over TLS (issue 40, item 4): a throw-away PostgreSQL 15 that takes TLS connections
// only (test/helpers/tls-postgres.ts). `sslmode` in DATABASE_URL means what it means to libpq
// (db/connection.ts), for every connection the app opens: the migrator, the worker's pool, the
// CLI's plain reader. A setting the server refuses ends a command with one line naming it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import { tlsConnection } from '../db/connection.ts';
import { createPrisma, type PrismaClient } from '../db/client.ts';
import { engineSql } from '../db/transaction.ts';
import { openPgReader } from '../db/pg-reader.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { assertOneLineError, detail, runCli } from './helpers/cli.ts';
import { createSource } from './helpers/deps.ts';
import { spawnWorker, type Spawned, within } from './helpers/process.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';
import { startTlsPostgres, type TlsPostgres } from './helpers/tls-postgres.ts';

const DB = 'durable_fetch_tls';
const RECORDS = 120;

let server: TlsPostgres;
const urlWith = (query: string) => `${server.urlFor(DB)}?${query}`;

before(async () => {
  server = await startTlsPostgres();
});

after(async () => {
  await server?.stop();
});

/** `SELECT ssl FROM pg_stat_ssl` of the session that runs it, through the engine's own statements. */
async function encrypted(prisma: PrismaClient): Promise<boolean> {
  const rows = await engineSql(prisma).$queryRaw<{ ssl: boolean }[]>`
    SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`;
  return rows[0]?.ssl === true;
}

void describe('database over TLS', () => {
  it('database-tls: with sslmode=require, `durable-fetch migrate` applies the migrations and says nothing on stderr', async () => {
    const result = await runCli(['migrate'], { DATABASE_URL: urlWith('sslmode=require') });
    assert.equal(result.code, 0, detail(result));
    // The pinned node-postgres prints a multi-line SECURITY WARNING for sslmode=require on its own.
    assert.equal(result.stderr, '', detail(result));
    assert.match(result.stdout, /applied \d+ migration\(s\)/, detail(result));
  });

  it("database-tls: the engine's pool and the CLI's plain reader are encrypted (pg_stat_ssl) with sslmode=require and with verify-full against the CA", async () => {
    for (const url of [
      urlWith('sslmode=require'),
      urlWith(`sslmode=verify-full&sslrootcert=${server.caFile}`),
    ]) {
      const prisma = createPrisma(url, { max: 2 });
      try {
        assert.equal(await encrypted(prisma), true, url);
      } finally {
        await prisma.$disconnect();
      }
      const reader = openPgReader(url);
      try {
        const rows = await reader.query<{ ssl: boolean }>(
          'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
          [],
        );
        assert.deepEqual(rows, [{ ssl: true }], url);
      } finally {
        await reader.close();
      }
    }
  });

  it('database-tls: with sslmode=verify-full and the CA as sslrootcert, `durable-fetch migrate` and `runs list` succeed', async () => {
    const env = { DATABASE_URL: urlWith(`sslmode=verify-full&sslrootcert=${server.caFile}`) };
    const migrate = await runCli(['migrate'], env);
    assert.equal(migrate.code, 0, detail(migrate));
    assert.match(migrate.stdout, /is up to date/, detail(migrate));
    const list = await runCli(['runs', 'list', '--json'], env);
    assert.equal(list.code, 0, detail(list));
    assert.equal(list.stderr, '', detail(list));
  });

  it('database-tls: verify-full with a CA that did not sign the server certificate ends migrate and runs list with one line naming sslrootcert', async () => {
    const env = { DATABASE_URL: urlWith(`sslmode=verify-full&sslrootcert=${server.wrongCaFile}`) };
    for (const args of [['migrate'], ['runs', 'list'], ['status']]) {
      const result = await runCli(args, env);
      assertOneLineError(
        result,
        /TLS with the server failed \(.*\): check sslmode and sslrootcert in DATABASE_URL/,
      );
      console.log(`  ${args.join(' ')}: ${result.stderr.trim()}`);
    }
  });

  it('database-tls: sslmode=disable against a server that takes TLS connections only ends migrate and runs list with one line naming sslmode', async () => {
    const env = {
      DATABASE_URL: `postgresql://postgres:s3cret-pw@127.0.0.1:${server.port}/${DB}?sslmode=disable`,
    };
    for (const args of [['migrate'], ['runs', 'list']]) {
      const result = await runCli(args, env);
      assertOneLineError(
        result,
        /refused a connection without TLS .*set sslmode=require or verify-full in DATABASE_URL/,
      );
      assert.doesNotMatch(result.stderr, /s3cret-pw/, detail(result));
      console.log(`  ${args.join(' ')}: ${result.stderr.trim()}`);
    }
  });

  it('database-tls: sslmode=prefer and verify-ca without sslrootcert are refused in one line before any connection', async () => {
    const prefer = await runCli(['runs', 'list'], { DATABASE_URL: urlWith('sslmode=prefer') });
    assertOneLineError(
      prefer,
      /sslmode=prefer, which is not supported: use disable, require, verify-ca or verify-full/,
    );
    const verifyCa = await runCli(['migrate'], { DATABASE_URL: urlWith('sslmode=verify-ca') });
    assertOneLineError(verifyCa, /sslmode=verify-ca without sslrootcert/);
    console.log(`  ${prefer.stderr.trim()}\n  ${verifyCa.stderr.trim()}`);
  });

  it('database-tls: sslmode maps to libpq semantics: require checks no certificate, unless sslrootcert is given; verify-ca checks no host name', () => {
    const require = tlsConnection('postgresql://u@h/db?sslmode=require&application_name=x');
    assert.deepEqual(require, {
      connectionString: 'postgresql://u@h/db?application_name=x',
      ssl: { rejectUnauthorized: false },
    });
    const requireCa = tlsConnection(`postgresql://u@h/db?sslmode=require&sslrootcert=${server.caFile}`);
    assert.ok(requireCa.ssl && requireCa.ssl.ca && requireCa.ssl.rejectUnauthorized === undefined);
    assert.equal(typeof requireCa.ssl.checkServerIdentity, 'function');
    const full = tlsConnection(`postgresql://u@h/db?sslmode=verify-full&sslrootcert=${server.caFile}`);
    assert.ok(full.ssl && full.ssl.ca && full.ssl.checkServerIdentity === undefined);
    assert.deepEqual(tlsConnection('postgresql://u@h/db?sslmode=disable'), {
      connectionString: 'postgresql://u@h/db',
      ssl: false,
    });
    assert.deepEqual(tlsConnection('postgresql://u@h/db'), { connectionString: 'postgresql://u@h/db' });
  });
});

void describe('a run through a worker whose DATABASE_URL has sslmode=require', () => {
  let partner: PartnerServer;
  let client: Client;
  let prisma: PrismaClient;
  let worker: Spawned;
  const taskQueue = `test-database-tls-${Date.now()}`;

  before(async () => {
    const url = urlWith('sslmode=require');
    // The database is made and migrated by this file's first test; again here, so this runs alone too.
    const migrate = await runCli(['migrate'], { DATABASE_URL: url });
    assert.equal(migrate.code, 0, detail(migrate));
    [partner, client] = await Promise.all([
      startPartner({ port: 0, recordCount: () => RECORDS }),
      testClient(),
    ]);
    prisma = createPrisma(url, { max: 2 });
    worker = spawnWorker({
      DATABASE_URL: url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
      PARTNER_PAGE_LIMIT: '50',
      LOG_LEVEL: 'warn',
    });
    await worker.waitFor(/worker polling task queue/, 60_000);
  });

  after(async () => {
    await worker?.stop('SIGKILL', 5_000);
    await prisma?.$disconnect();
    await client?.connection.close();
    await partner?.close();
  });

  it('database-tls: a fetch run stores its records, and every session of the worker is encrypted', async () => {
    await createSource(prisma, 'tls-src', partner.url, { pageSize: 50 });
    const ctx = { temporal: client, prisma, taskQueue, now: () => new Date('2026-11-30T12:00:00Z') };
    const run = await startFetch(ctx, { sourceId: 'tls-src', date: '2026-11-20', requestedBy: 'test' });
    const result = await within(run.handle.result(), 120_000, () => worker.output());
    assert.equal(result.status, 'succeeded', JSON.stringify(result));
    assert.equal(await prisma.fetchedRecord.count({ where: { sourceId: 'tls-src' } }), RECORDS);
    const sessions = await engineSql(prisma).$queryRaw<{ sessions: number; plain: number }[]>`
      SELECT count(*)::int AS sessions, count(*) FILTER (WHERE NOT s.ssl)::int AS plain
        FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
       WHERE a.datname = current_database() AND a.backend_type = 'client backend'`;
    assert.ok((sessions[0]?.sessions ?? 0) > 2, 'the worker holds sessions of its own');
    assert.equal(sessions[0]?.plain, 0);
  });
});
