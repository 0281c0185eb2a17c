// Real PostgreSQL for every test, cheaply: the test runner migrates one template database per run
// and each test clones it (CREATE DATABASE … TEMPLATE copies files, no SQL replay).
// Be very careful: PostgreSQL refuses to clone a template while anyone is connected to it, so the
// template is closed to connections once migrated, and nothing here ever opens one to it.
import { randomBytes } from 'node:crypto';
import { Client, DatabaseError, escapeIdentifier } from 'pg';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { applyMigrations, withDatabaseName } from '../../prisma/migrator.ts';
import { prismaOn } from '../../db/client.ts';

export interface TestDatabase {
  url: string;
  /** The database's name on the test server. */
  name: string;
  prisma: PrismaClient;
  /** Disconnects `prisma` and drops the database, closing any other session still using it. */
  drop: () => Promise<void>;
}

let counter = 0;

/**
 * (Re)creates database `name` on the server of `adminUrl` (a maintenance database such as
 * postgres://postgres@127.0.0.1:5432/postgres), applies prisma/migrations to it and closes it to
 * connections so it can serve as a template. Not idempotent: a stale database of that name is
 * dropped first, even if in use. Returns the new database's URL. Throws on SQL or migration errors.
 */
export async function createTemplateDatabase(adminUrl: string, name: string): Promise<string> {
  await dropDatabase(adminUrl, name);
  await admin(adminUrl, (c) => c.query(`CREATE DATABASE ${escapeIdentifier(name)}`));
  const url = withDatabaseName(adminUrl, name);
  await applyMigrations(url);
  // The applier has closed its session; from here on no one may connect (clones would fail).
  await admin(adminUrl, (c) =>
    c.query(`ALTER DATABASE ${escapeIdentifier(name)} WITH ALLOW_CONNECTIONS false`),
  );
  return url;
}

/**
 * A fresh, fully migrated database cloned from the run's template (env DF_TEST_TEMPLATE_DB on the
 * server of DF_TEST_PG_ADMIN_URL), with a PrismaClient on it. Each call makes a new database with a
 * unique name; call `drop()` when done. Throws when the env is missing (run the tests with
 * `npm test`, which creates the template and sets both variables).
 */
export async function useTestDatabase(): Promise<TestDatabase> {
  const { adminUrl, template } = testEnv();
  const database = await createDatabase(adminUrl, template);
  const prisma = prismaOn({ connectionString: database.url });
  return {
    url: database.url,
    name: database.name,
    prisma,
    drop: async () => {
      await prisma.$disconnect();
      await database.drop();
    },
  };
}

/**
 * A fresh, empty database (no tables, no `_prisma_migrations`) on the test server, for tests of the
 * migrator itself. Same env and error as {@link useTestDatabase}; call `drop()` when done.
 */
export async function useEmptyDatabase(): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  return createDatabase(testEnv().adminUrl, 'template0');
}

/** Drops database `name` if it exists, terminating its sessions (WITH (FORCE)). Idempotent. */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await admin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${escapeIdentifier(name)} WITH (FORCE)`));
}

function testEnv(): { adminUrl: string; template: string } {
  const adminUrl = process.env.DF_TEST_PG_ADMIN_URL;
  const template = process.env.DF_TEST_TEMPLATE_DB;
  if (!adminUrl || !template) {
    throw new Error(
      'DF_TEST_PG_ADMIN_URL and DF_TEST_TEMPLATE_DB are not set: run the tests with `npm test` ' +
        '(test/run.ts migrates a template database and sets them), not with node --test directly.',
    );
  }
  return { adminUrl, template };
}

/**
 * An outage of test database `name` as a client sees a managed failover or a maintenance window:
 * `refused` closes it to new connections (they fail with SQLSTATE 55000) and ends every session
 * it has; `false` opens it again.
 */
export async function refuseConnections(name: string, refused: boolean): Promise<void> {
  await admin(testEnv().adminUrl, async (c) => {
    await c.query(
      `ALTER DATABASE ${escapeIdentifier(name)} WITH ALLOW_CONNECTIONS ${refused ? 'false' : 'true'}`,
    );
    if (refused) {
      await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
    }
  });
}

async function createDatabase(
  adminUrl: string,
  template: string,
): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const name = `df_test_${process.pid}_${++counter}_${randomBytes(4).toString('hex')}`;
  const sql = `CREATE DATABASE ${escapeIdentifier(name)} TEMPLATE ${escapeIdentifier(template)}`;
  // A session that just closed can linger a moment on the server and block the clone with 55006
  // (object_in_use): retry a bounded number of times with jittered backoff.
  for (let attempt = 1; ; attempt++) {
    try {
      await admin(adminUrl, (c) => c.query(sql));
      break;
    } catch (error) {
      if (!(error instanceof DatabaseError && error.code === '55006') || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt + Math.random() * 100));
    }
  }
  return { url: withDatabaseName(adminUrl, name), name, drop: () => dropDatabase(adminUrl, name) };
}

async function admin<T>(adminUrl: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: adminUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
