import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { appendFile, cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from 'pg';
import { DEFAULT_MIGRATIONS_DIR, applyMigrations } from '../prisma/migrator.ts';
import { useEmptyDatabase } from './helpers/database.ts';
import { ENGINE_SCHEMA, engineConnection } from '../db/pool-config.ts';

const EXPECTED_TABLES = [
  '_prisma_migrations',
  'audit_entry',
  'breaker',
  'credential',
  'dead_letter',
  'downstream',
  'downstream_action',
  'downstream_calls',
  'exchange_rate',
  'fetch_run',
  'fetched_page',
  'fetched_page_part',
  'fetched_record',
  'idempotency_record',
  'outbox_event',
  'queue_sample',
  'run_cursor',
  'source',
  'source_watermark',
];

/** Rows of `sql` on a session whose search_path is the engine's (its schema, then public). */
async function query<T extends object>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client(engineConnection(url));
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

async function migrationFolders(dir: string): Promise<{ name: string; checksum: string }[]> {
  const entries = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory());
  return Promise.all(
    entries
      .map((e) => e.name)
      .sort()
      .map(async (name) => ({
        name,
        checksum: createHash('sha256')
          .update(await readFile(path.join(dir, name, 'migration.sql')))
          .digest('hex'),
      })),
  );
}

/** Sessions on the database besides our own, polled briefly: a closed session exits asynchronously. */
async function otherSessions(url: string): Promise<number> {
  let n = -1;
  for (let i = 0; i < 20 && n !== 0; i++) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, 100));
    const rows = await query<{ n: number }>(
      url,
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    n = rows[0]?.n ?? -1;
  }
  return n;
}

interface MigrationRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  applied_steps_count: number;
}
const migrationRows = (url: string) =>
  query<MigrationRow>(
    url,
    'SELECT migration_name, checksum, finished_at, rolled_back_at, applied_steps_count FROM _prisma_migrations ORDER BY migration_name',
  );

void describe('migrator', () => {
  let tmp: string;
  before(async () => {
    tmp = await mkdtemp(path.join(tmpdir(), 'df-migrator-'));
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  void test('migrator: applying to an empty database creates every table and one checksummed row per folder', async () => {
    const db = await useEmptyDatabase();
    try {
      const result = await applyMigrations(db.url);
      const folders = await migrationFolders(DEFAULT_MIGRATIONS_DIR);
      assert.ok(folders.length > 0);
      assert.deepEqual(result, { applied: folders.map((f) => f.name), alreadyApplied: 0 });

      const tables = await query<{ table_name: string }>(
        db.url,
        'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
        [ENGINE_SCHEMA],
      );
      assert.deepEqual(
        tables.map((t) => t.table_name),
        EXPECTED_TABLES,
      );
      // Nothing of the engine in public, where an application's own migrations look (R12: the
      // engine's tables are never an application's drift).
      const inPublic = await query(
        db.url,
        "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'",
      );
      assert.equal(inPublic.length, 0, 'the engine created nothing in public');
      const rows = await migrationRows(db.url);
      assert.deepEqual(
        rows.map((r) => ({ name: r.migration_name, checksum: r.checksum })),
        folders,
      );
      for (const row of rows) {
        assert.ok(row.finished_at instanceof Date, `${row.migration_name} has finished_at`);
        assert.equal(row.rolled_back_at, null);
        assert.equal(row.applied_steps_count, 1);
      }
    } finally {
      await db.drop();
    }
  });

  void test('migrator: applying twice applies nothing new and adds no rows', async () => {
    const db = await useEmptyDatabase();
    try {
      const first = await applyMigrations(db.url);
      const second = await applyMigrations(db.url);
      assert.deepEqual(second, { applied: [], alreadyApplied: first.applied.length });
      assert.equal((await migrationRows(db.url)).length, first.applied.length);
    } finally {
      await db.drop();
    }
  });

  void test('migrator: two concurrent starters both succeed and apply each folder exactly once', async () => {
    const db = await useEmptyDatabase();
    try {
      const [a, b] = await Promise.all([applyMigrations(db.url), applyMigrations(db.url)]);
      const folders = await migrationFolders(DEFAULT_MIGRATIONS_DIR);
      assert.deepEqual([...a.applied, ...b.applied].sort(), folders.map((f) => f.name).sort());
      assert.equal(a.alreadyApplied + b.alreadyApplied, folders.length);
      const rows = await migrationRows(db.url);
      assert.deepEqual(
        rows.map((r) => r.migration_name),
        folders.map((f) => f.name),
      );
    } finally {
      await db.drop();
    }
  });

  void test('migrator: a migration modified after it was applied is refused and nothing else is applied', async () => {
    const db = await useEmptyDatabase();
    const dir = path.join(tmp, 'modified');
    try {
      await cp(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
      const { applied } = await applyMigrations(db.url, { migrationsDir: dir });
      const first = applied[0]!;
      await appendFile(path.join(dir, first, 'migration.sql'), '\n-- edited after deploy\n');
      await mkdir(path.join(dir, '99990101000000_later'));
      await writeFile(
        path.join(dir, '99990101000000_later', 'migration.sql'),
        'CREATE TABLE "later" ("id" INTEGER);',
      );

      await assert.rejects(applyMigrations(db.url, { migrationsDir: dir }), {
        message: new RegExp(`migration ${first} was modified after it was applied`),
      });
      const later = await query(db.url, "SELECT 1 FROM pg_class WHERE relname = 'later'");
      assert.equal(later.length, 0, 'the later migration must not run after a refusal');
    } finally {
      await db.drop();
    }
  });

  void test('migrator: a failing migration is rolled back, recorded as failed, and blocks later runs', async () => {
    const db = await useEmptyDatabase();
    const dir = path.join(tmp, 'failing');
    try {
      await mkdir(path.join(dir, '00000000000001_broken'), { recursive: true });
      await writeFile(
        path.join(dir, '00000000000001_broken', 'migration.sql'),
        'CREATE TABLE "half_done" ("id" INTEGER);\nSELECT * FROM "no_such_table";\n',
      );
      await assert.rejects(applyMigrations(db.url, { migrationsDir: dir }), {
        message: /migration 00000000000001_broken failed and was rolled back/,
      });
      const halfDone = await query(db.url, "SELECT 1 FROM pg_class WHERE relname = 'half_done'");
      assert.equal(halfDone.length, 0, 'the failed folder left no table behind');
      const rows = await migrationRows(db.url);
      assert.equal(rows.length, 1);
      assert.equal(rows[0]?.finished_at, null);

      await assert.rejects(applyMigrations(db.url, { migrationsDir: dir }), {
        message: /00000000000001_broken failed in an earlier run/,
      });
      assert.equal(await otherSessions(db.url), 0, 'the applier closed its connection after refusing');
    } finally {
      await db.drop();
    }
  });

  void test('migrator: a database migrated with the engine in public is moved into its own schema once, rows and all', async () => {
    const db = await useEmptyDatabase();
    try {
      // The layout before the engine had a schema: every folder applied in public.
      const old = await applyMigrations(db.url, { schema: 'public' });
      const plain = new Client({ connectionString: db.url });
      await plain.connect();
      try {
        await plain.query(
          `INSERT INTO source (id, name, base_url, updated_at) VALUES ('kept', 'Kept', 'http://partner.test', now())`,
        );
        // An application's own table and bookkeeping beside it stay where they are.
        await plain.query('CREATE TABLE shipment (id TEXT PRIMARY KEY)');
        await plain.query(
          `INSERT INTO _prisma_migrations (id, checksum, migration_name, finished_at, applied_steps_count)
           VALUES ('app-1', 'x', '20270101000000_app_init', now(), 1)`,
        );
      } finally {
        await plain.end();
      }

      const lines: string[] = [];
      const adopted = await applyMigrations(db.url, { log: (line) => lines.push(line) });
      assert.deepEqual(adopted, { applied: [], alreadyApplied: old.applied.length });
      assert.match(lines.join('\n'), /moved the engine's \d+ tables from schema public into durable_fetch/);

      const kept = await query<{ id: string }>(db.url, `SELECT id FROM ${ENGINE_SCHEMA}.source`);
      assert.deepEqual(kept, [{ id: 'kept' }]);
      const publicTables = await query<{ table_name: string }>(
        db.url,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
      );
      assert.deepEqual(
        publicTables.map((t) => t.table_name),
        ['_prisma_migrations', 'shipment'],
      );
      const appRows = await query<{ migration_name: string }>(
        db.url,
        'SELECT migration_name FROM public._prisma_migrations',
      );
      assert.deepEqual(appRows, [{ migration_name: '20270101000000_app_init' }]);
      assert.deepEqual(
        (await migrationRows(db.url)).map((r) => r.migration_name),
        old.applied,
      );
      const types = await query<{ n: number }>(
        db.url,
        "SELECT count(*)::int AS n FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = 'public' AND t.typtype = 'e'",
      );
      assert.equal(types[0]?.n, 0, 'the enum types moved too');
      // Applying again finds everything in place.
      assert.deepEqual(await applyMigrations(db.url), { applied: [], alreadyApplied: old.applied.length });
    } finally {
      await db.drop();
    }
  });
});
