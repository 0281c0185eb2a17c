// Applies prisma/migrations the way `prisma migrate deploy` does, for machines where Prisma's
// native schema engine cannot be downloaded. Same folders, same `_prisma_migrations` table, same
// checksums and the same advisory lock key, so either tool can take over from the other
// (`prisma migrate deploy` with `?schema=durable_fetch` in its URL).
//
// Everything lands in the engine's own PostgreSQL schema (contract/engine-schema.ts), its
// `_prisma_migrations` included, so that an application's own Prisma migrations in `public` never
// see the engine's tables. A database migrated before the engine had a schema of its own (its
// tables in `public`) is adopted once: its objects move over, rows and all.
import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, DatabaseError, escapeIdentifier } from 'pg';
import { ENGINE_SCHEMA } from '../contract/engine-schema.ts';
import { tlsConnection } from '../db/connection.ts';

/** The migrations folder next to this file (prisma/migrations). */
export const DEFAULT_MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

// Prisma's schema engine locks this key on PostgreSQL: sharing it serializes us with `prisma migrate`.
const MIGRATION_LOCK_KEY = 72707369;
const DEFAULT_LOCK_TIMEOUT_MS = 120_000;

// Byte-for-byte the table Prisma's engine creates, so `prisma migrate status` reads our rows.
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export interface ApplyMigrationsOptions {
  /** Folder holding `<timestamp>_<name>/migration.sql` folders. Default: {@link DEFAULT_MIGRATIONS_DIR}. */
  migrationsDir?: string;
  /** Receives one human-readable line per applied migration (and warnings). Default: silent. */
  log?: (line: string) => void;
  /** How long to wait for another process holding the migration lock. Default: 120 s. */
  lockTimeoutMs?: number;
  /**
   * The PostgreSQL schema the migrations create their objects in, with its `_prisma_migrations`
   * (created when missing). Default: the engine's, {@link ENGINE_SCHEMA}. An application applying
   * its own folder passes its own (e.g. `public`); only the engine's is adopted from `public`.
   */
  schema?: string;
}

interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

interface MigrationRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  logs: string | null;
}

/**
 * Brings the database up to date with the migration folders, in name order.
 *
 * Idempotent: folders already recorded in `_prisma_migrations` are skipped, so calling it at every
 * start is safe, also from several processes at once (a session-level advisory lock serializes them;
 * the loser finds everything applied). Each folder's SQL runs in its own transaction together with
 * its bookkeeping row, so a folder is either fully applied and recorded or not at all. The SQL must
 * therefore not contain its own BEGIN/COMMIT, nor statements PostgreSQL refuses inside a transaction
 * (e.g. CREATE INDEX CONCURRENTLY).
 *
 * Throws (before applying anything) when a recorded migration's checksum differs from its
 * migration.sql ("was modified after it was applied"), or when an earlier run left a failed row, as
 * Prisma does. When a folder's SQL fails, its transaction is rolled back, a failed row with the error
 * in `logs` is recorded (so the next start refuses until someone resolves it) and an Error is thrown.
 * Always releases the lock and closes its connection.
 */
export async function applyMigrations(
  connectionString: string,
  options: ApplyMigrationsOptions = {},
): Promise<{ applied: string[]; alreadyApplied: number }> {
  const log = options.log ?? (() => {});
  const migrations = await readMigrations(options.migrationsDir ?? DEFAULT_MIGRATIONS_DIR);
  const client = new Client(tlsConnection(connectionString));
  // An idle client emits 'error' when the server ends the session; the pending query rejects anyway.
  client.on('error', () => {});
  try {
    await client.connect();
    await acquireLock(client, options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS);
    const schema = options.schema ?? ENGINE_SCHEMA;
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${escapeIdentifier(schema)}`);
    if (schema === ENGINE_SCHEMA) await adoptPublicLayout(client, migrations, log);
    // Only the target schema: an unqualified CREATE lands there, never in `public`.
    await client.query(`SET search_path TO ${escapeIdentifier(schema)}`);
    await client.query(CREATE_MIGRATIONS_TABLE);
    const { rows } = await client.query<MigrationRow>(
      'SELECT migration_name, checksum, finished_at, rolled_back_at, logs FROM "_prisma_migrations" ORDER BY started_at',
    );
    const pending = planMigrations(migrations, rows, log);
    const applied: string[] = [];
    for (const migration of pending) {
      await applyOne(client, migration);
      applied.push(migration.name);
      log(`applied migration ${migration.name}`);
    }
    return { applied, alreadyApplied: migrations.length - pending.length };
  } finally {
    // Ending the session also releases the session-level advisory lock; a failure to end must not
    // hide the error that brought us here.
    await client.end().catch(() => {});
  }
}

/**
 * Creates the database named in `connectionString` when it does not exist, by connecting to the
 * `postgres` maintenance database of the same server. Returns true when it created it, false when it
 * already existed (also when a concurrent caller created it first). Idempotent; the name is quoted
 * as an identifier, so any name is safe. Throws the driver's error when the server is unreachable or
 * the role may not create databases.
 */
export async function ensureDatabase(connectionString: string): Promise<boolean> {
  const name = databaseName(connectionString);
  const client = new Client(tlsConnection(withDatabaseName(connectionString, 'postgres')));
  client.on('error', () => {});
  try {
    await client.connect();
    const existing = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (existing.rowCount) return false;
    await client.query(`CREATE DATABASE ${escapeIdentifier(name)}`);
    return true;
  } catch (error) {
    // 42P04 duplicate_database, or 23505 when two CREATE DATABASE race on pg_database's unique index.
    if (error instanceof DatabaseError && (error.code === '42P04' || error.code === '23505')) return false;
    throw error;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Drops the database named in `connectionString` if it exists, ending its sessions (WITH (FORCE)),
 * through the `postgres` maintenance database of the same server. Idempotent.
 */
export async function dropDatabase(connectionString: string): Promise<void> {
  const name = databaseName(connectionString);
  const client = new Client(tlsConnection(withDatabaseName(connectionString, 'postgres')));
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end().catch(() => {});
  }
}

/** The database name in a postgres:// URL. Throws when the URL names none. */
export function databaseName(connectionString: string): string {
  const name = decodeURIComponent(new URL(connectionString).pathname.replace(/^\//, ''));
  if (!name) throw new Error(`connection string names no database: ${redact(connectionString)}`);
  return name;
}

/** The same postgres:// URL (credentials, host, parameters) pointing at another database. Pure. */
export function withDatabaseName(connectionString: string, name: string): string {
  const url = new URL(connectionString);
  url.pathname = `/${encodeURIComponent(name)}`;
  return url.toString();
}

async function readMigrations(dir: string): Promise<MigrationFile[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const folders = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return Promise.all(
    folders.map(async (name) => {
      const file = path.join(dir, name, 'migration.sql');
      const sql = await readFile(file, 'utf8').catch((error: unknown) => {
        throw new Error(`migration folder ${name} has no readable migration.sql (${file})`, { cause: error });
      });
      return { name, sql, checksum: createHash('sha256').update(sql, 'utf8').digest('hex') };
    }),
  );
}

function planMigrations(
  migrations: MigrationFile[],
  rows: MigrationRow[],
  log: (line: string) => void,
): MigrationFile[] {
  // Rows an operator marked rolled back (`prisma migrate resolve --rolled-back`) count as not applied.
  const live = rows.filter((r) => r.rolled_back_at === null);
  const failed = live.filter((r) => r.finished_at === null);
  if (failed.length > 0) {
    const names = failed.map((r) => r.migration_name).join(', ');
    throw new Error(
      `migration ${names} failed in an earlier run (unfinished row in _prisma_migrations; logs: ${failed[0]?.logs ?? 'none'}). ` +
        `Repair the database, then mark it with \`prisma migrate resolve --rolled-back <name>\` ` +
        `(or set rolled_back_at = now() on that row) before applying migrations again.`,
    );
  }
  const appliedChecksums = new Map(live.map((r) => [r.migration_name, r.checksum]));
  for (const migration of migrations) {
    const recorded = appliedChecksums.get(migration.name);
    if (recorded !== undefined && recorded !== migration.checksum) {
      throw new Error(
        `migration ${migration.name} was modified after it was applied (checksum ${recorded} in ` +
          `_prisma_migrations, ${migration.checksum} on disk). Restore the file and add a new migration instead.`,
      );
    }
  }
  const onDisk = new Set(migrations.map((m) => m.name));
  for (const name of appliedChecksums.keys()) {
    if (!onDisk.has(name))
      log(`warning: migration ${name} is applied but missing from the migrations folder`);
  }
  return migrations.filter((m) => !appliedChecksums.has(m.name));
}

/** The tables, types and functions a migration folder creates, by name. */
function createdObjects(migrations: MigrationFile[]) {
  const names = (re: RegExp) => [
    ...new Set(migrations.flatMap((m) => [...m.sql.matchAll(re)].map((hit) => (hit[1] ?? '').toLowerCase()))),
  ];
  return {
    tables: names(/^\s*CREATE (?:UNLOGGED )?TABLE (?:IF NOT EXISTS )?"?(\w+)"?/gim),
    types: names(/^\s*CREATE TYPE "?(\w+)"?/gim),
    functions: names(/^\s*CREATE (?:OR REPLACE )?FUNCTION "?(\w+)"?/gim),
  };
}

/**
 * A database migrated when the engine kept its tables in `public` (its `_prisma_migrations`
 * there, recording this folder's migrations) is moved into the engine's schema, in one
 * transaction: every table, enum type and function the folder's migrations create (a table's
 * indexes, constraints and sequences move with it; rows stay as they are), and the bookkeeping
 * rows of this folder. A `public._prisma_migrations` left with no rows (nobody else's) is dropped.
 * Nothing to do when the engine's schema already has its own bookkeeping, or `public` none of ours.
 */
async function adoptPublicLayout(client: Client, migrations: MigrationFile[], log: (line: string) => void) {
  const target = escapeIdentifier(ENGINE_SCHEMA);
  const { rows } = await client.query<{ ours: string | null; legacy: string | null }>(
    `SELECT to_regclass($1) AS ours, to_regclass('public._prisma_migrations') AS legacy`,
    [`${target}._prisma_migrations`],
  );
  if (rows[0]?.ours || !rows[0]?.legacy) return;
  const names = migrations.map((m) => m.name);
  const recorded = await client.query(
    'SELECT 1 FROM public._prisma_migrations WHERE migration_name = ANY($1) LIMIT 1',
    [names],
  );
  if (!recorded.rowCount) return;
  const { tables, types, functions } = createdObjects(migrations);
  await client.query('BEGIN');
  try {
    let moved = 0;
    for (const table of tables) {
      const found = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [
        `public.${escapeIdentifier(table)}`,
      ]);
      if (!found.rows[0]?.t) continue;
      await client.query(`ALTER TABLE public.${escapeIdentifier(table)} SET SCHEMA ${target}`);
      moved += 1;
    }
    for (const type of types) {
      const found = await client.query<{ t: string | null }>('SELECT to_regtype($1) AS t', [
        `public.${escapeIdentifier(type)}`,
      ]);
      if (!found.rows[0]?.t) continue;
      await client.query(`ALTER TYPE public.${escapeIdentifier(type)} SET SCHEMA ${target}`);
    }
    const procs = await client.query<{ signature: string }>(
      `SELECT p.oid::regprocedure::text AS signature FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND p.proname = ANY($1)`,
      [functions],
    );
    for (const { signature } of procs.rows) {
      // regprocedure text is already a quoted, schema-qualified signature (search_path is the default here).
      await client.query(`ALTER FUNCTION ${signature} SET SCHEMA ${target}`);
    }
    await client.query(
      CREATE_MIGRATIONS_TABLE.replace('"_prisma_migrations"', `${target}."_prisma_migrations"`),
    );
    await client.query(
      `INSERT INTO ${target}._prisma_migrations SELECT * FROM public._prisma_migrations WHERE migration_name = ANY($1)`,
      [names],
    );
    await client.query('DELETE FROM public._prisma_migrations WHERE migration_name = ANY($1)', [names]);
    const left = await client.query('SELECT 1 FROM public._prisma_migrations LIMIT 1');
    if (!left.rowCount) await client.query('DROP TABLE public._prisma_migrations');
    await client.query('COMMIT');
    log(`moved the engine's ${moved} tables from schema public into ${ENGINE_SCHEMA}`);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw new Error(
      `moving the engine's tables into schema ${ENGINE_SCHEMA} failed, nothing moved: ${String(error)}`,
      {
        cause: error,
      },
    );
  }
}

async function acquireLock(client: Client, timeoutMs: number): Promise<void> {
  // lock_timeout bounds the wait for the advisory lock; reset so it cannot abort migration DDL.
  await client.query(`SET lock_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  } catch (error) {
    if (error instanceof DatabaseError && error.code === '55P03') {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for the migration lock: another process is applying migrations`,
        { cause: error },
      );
    }
    throw error;
  }
  await client.query('RESET lock_timeout');
}

async function applyOne(client: Client, migration: MigrationFile): Promise<void> {
  const id = randomUUID();
  await client.query('BEGIN');
  try {
    await client.query(
      'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)',
      [id, migration.checksum, migration.name],
    );
    // No parameters: the simple query protocol runs the whole multi-statement file.
    await client.query(migration.sql);
    await client.query(
      'UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1',
      [id],
    );
    await client.query('COMMIT');
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // Best effort: the database is unchanged either way; the row makes the failure visible to
    // `prisma migrate status` and stops later starts, as Prisma's own failed rows do.
    await client
      .query('ROLLBACK')
      .then(() =>
        client.query(
          'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, logs, started_at, applied_steps_count) VALUES ($1, $2, $3, $4, now(), 0)',
          [id, migration.checksum, migration.name, message],
        ),
      )
      .catch(() => {});
    throw new Error(
      `migration ${migration.name} failed and was rolled back: ${message}. Fix it, then run ` +
        `\`prisma migrate resolve --rolled-back ${migration.name}\` before applying again.`,
      { cause: error },
    );
  }
}

function redact(connectionString: string): string {
  return connectionString.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
