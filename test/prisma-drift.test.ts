import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_SCHEMA_PATH, findSchemaDrift } from '../prisma/drift.ts';
import { DEFAULT_MIGRATIONS_DIR, applyMigrations } from '../prisma/migrator.ts';
import { useEmptyDatabase, useTestDatabase } from './helpers/database.ts';

/** Replaces exactly one occurrence of `from`, so a test cannot silently edit nothing. */
function replaceOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  assert.ok(at >= 0 && text.indexOf(from, at + 1) < 0, `expected exactly one ${JSON.stringify(from)}`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}

void describe('prisma drift', () => {
  let tmp: string;
  before(async () => {
    tmp = await mkdtemp(path.join(tmpdir(), 'df-drift-'));
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  void test('prisma-drift: the migrated database matches every file of the Prisma schema exactly', async () => {
    const db = await useTestDatabase();
    try {
      assert.deepEqual(await findSchemaDrift(db.url), []);
    } finally {
      await db.drop();
    }
  });

  void test('prisma-drift: a database that lost a column, a NOT NULL, an index and a default is reported by table and column', async () => {
    const db = await useTestDatabase();
    try {
      await db.prisma.$executeRawUnsafe('ALTER TABLE "fetch_run" DROP COLUMN "cursor"');
      await db.prisma.$executeRawUnsafe('ALTER TABLE "fetch_run" ALTER COLUMN "workflow_id" DROP NOT NULL');
      await db.prisma.$executeRawUnsafe('DROP INDEX "outbox_event_status_seq_idx"');
      await db.prisma.$executeRawUnsafe('ALTER TABLE "source" ALTER COLUMN "page_size" DROP DEFAULT');
      await db.prisma.$executeRawUnsafe('ALTER TABLE "source" ADD COLUMN "legacy_flag" BOOLEAN');
      await db.prisma.$executeRawUnsafe(
        'ALTER TABLE "idempotency_record" ALTER COLUMN "expires_at" TYPE TIMESTAMP(3)',
      );

      const drift = await findSchemaDrift(db.url);
      assert.deepEqual(drift.sort(), [
        'column fetch_run.cursor is missing from the database',
        'column fetch_run.workflow_id: nullable in the database, the Prisma schema expects NOT NULL',
        'column idempotency_record.expires_at: type is timestamp(3) without time zone in the database, the Prisma schema expects timestamp(3) with time zone',
        'column source.legacy_flag exists in the database but not in the Prisma schema',
        'column source.page_size: default is none in the database, the Prisma schema expects 1000',
        'index on outbox_event(status, seq) is missing from the database (expected name outbox_event_status_seq_idx)',
      ]);
    } finally {
      await db.drop();
    }
  });

  void test('prisma-drift: a change to the engine schema without a migration is reported', async () => {
    const schemaDir = path.join(tmp, 'engine-change');
    await cp(DEFAULT_SCHEMA_PATH, schemaDir, { recursive: true });
    const enginePath = path.join(schemaDir, 'engine.prisma');
    const schema = await readFile(enginePath, 'utf8');
    let edited = replaceOnce(
      schema,
      '  cursor         String?\n',
      '  cursor         String?\n  priority       Int       @default(0)\n',
    );
    edited = replaceOnce(
      edited,
      '  @@index([expiresAt])\n  @@map("idempotency_record")\n',
      '  @@index([expiresAt])\n  @@index([fingerprint])\n  @@map("idempotency_record")\n',
    );
    edited = replaceOnce(edited, '  dead\n', '  dead\n  archived\n');
    await writeFile(enginePath, edited);
    const db = await useTestDatabase();
    try {
      const drift = await findSchemaDrift(db.url, { schemaPath: schemaDir });
      assert.deepEqual(drift.sort(), [
        'column fetch_run.priority is missing from the database',
        "enum outbox_status: value 'archived' is missing from the database",
        'index on idempotency_record(fingerprint) is missing from the database (expected name idempotency_record_fingerprint_idx)',
      ]);
    } finally {
      await db.drop();
    }
  });

  void test('prisma-drift: a model in another schema file, even in a subfolder, without a migration is reported', async () => {
    const schemaDir = path.join(tmp, 'new-job');
    await cp(DEFAULT_SCHEMA_PATH, schemaDir, { recursive: true });
    // Prisma reads every *.prisma file under the folder, subfolders included, and nothing else.
    await mkdir(path.join(schemaDir, 'jobs'));
    await writeFile(
      path.join(schemaDir, 'jobs', 'example-job.prisma'),
      'model ExampleJobRow {\n  id Int @id\n\n  @@map("example_job_row")\n}\n',
    );
    await writeFile(path.join(schemaDir, 'notes.prisma.txt'), 'model Ignored {\n  id Int @id\n}\n');
    const db = await useTestDatabase();
    try {
      assert.deepEqual(await findSchemaDrift(db.url, { schemaPath: schemaDir }), [
        'table example_job_row is missing from the database',
      ]);
    } finally {
      await db.drop();
    }
  });

  void test('prisma-drift: a hand-written migration that forgot a column and a foreign key is reported', async () => {
    const dir = path.join(tmp, 'migrations');
    await cp(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
    const file = path.join(dir, '20261129000000_init', 'migration.sql');
    let sql = await readFile(file, 'utf8');
    sql = replaceOnce(sql, '    "lease_token" UUID,\n', '');
    sql = replaceOnce(
      sql,
      'ALTER TABLE "fetched_record" ADD CONSTRAINT "fetched_record_fetch_run_id_fkey" FOREIGN KEY ("fetch_run_id") REFERENCES "fetch_run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;',
      '',
    );
    await writeFile(file, sql);
    const db = await useEmptyDatabase();
    try {
      await applyMigrations(db.url, { migrationsDir: dir });
      const drift = await findSchemaDrift(db.url);
      assert.deepEqual(drift.sort(), [
        'column fetch_run.lease_token is missing from the database',
        'foreign key fetched_record(fetch_run_id) -> fetch_run(id) is missing from the database (expected name fetched_record_fetch_run_id_fkey)',
      ]);
    } finally {
      await db.drop();
    }
  });
});
