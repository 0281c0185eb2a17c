/**
 * Backup and restore with the operators' own tools, for the restore tests: an online, consistent
 * copy of a live SQLite file (the Temporal dev server's state) with SQLite's backup API through the
 * `sqlite3` shell, and `pg_dump` / `pg_restore` of a test database into a fresh one.
 *
 * Be very careful: a plain file copy of a SQLite database being written is not a backup (a torn
 * page, or a WAL not yet checkpointed, is silently lost). `.backup` copies through SQLite's own
 * locking, page by page from one consistent read of the source.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { Client, escapeIdentifier } from 'pg';
import { withDatabaseName } from '../../prisma/migrator.ts';
import { dropDatabase } from './database.ts';

const run = promisify(execFile);
/** Dumps and restores of test databases are a few MB: minutes are slack, not expectation. */
const TOOL_TIMEOUT_MS = 300_000;

async function onPath(name: string): Promise<boolean> {
  try {
    await run('sh', ['-c', `command -v ${name}`]);
    return true;
  } catch {
    return false;
  }
}

/**
 * The `sqlite3` shell, installed from Debian's package when missing and this process is root (CI
 * and the project's machines are): node 20 has no `node:sqlite` and the project ships no SQLite
 * binding, and a shell is what an operator backing up a dev server has at hand.
 * @throws Error saying how to install it when it is missing and cannot be installed.
 */
export async function ensureSqlite3(log: (line: string) => void): Promise<string> {
  if (await onPath('sqlite3')) return 'sqlite3';
  if (process.getuid?.() !== 0) {
    throw new Error('the restore test needs the sqlite3 shell: apt-get install -y sqlite3 (as root)');
  }
  log('sqlite3 missing: apt-get install -y sqlite3');
  await run('apt-get', ['update', '-qq'], { timeout: TOOL_TIMEOUT_MS });
  await run('apt-get', ['install', '-y', '-qq', 'sqlite3'], {
    timeout: TOOL_TIMEOUT_MS,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return 'sqlite3';
}

/**
 * Copies the live SQLite database `source` to `target` with SQLite's online backup (`.backup`),
 * waiting up to 30 s for a writer's lock, then checks the copy (`PRAGMA integrity_check`).
 * Resolves with the copy's size in bytes. @throws when the shell fails or the copy is not sound.
 */
export async function backupSqlite(sqlite3: string, source: string, target: string): Promise<number> {
  const quoted = `'${target.replaceAll("'", "''")}'`;
  await run(sqlite3, [source, '.timeout 30000', `.backup main ${quoted}`], { timeout: TOOL_TIMEOUT_MS });
  const { stdout } = await run(sqlite3, [target, 'PRAGMA integrity_check;'], { timeout: TOOL_TIMEOUT_MS });
  if (stdout.trim() !== 'ok') throw new Error(`the SQLite backup ${target} is not sound: ${stdout}`);
  return (await stat(target)).size;
}

/** The server's major version (15 for 15.20), read from `server_version_num`. */
async function serverMajor(url: string): Promise<number> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
    return Math.floor(Number(rows[0]?.v) / 10_000);
  } finally {
    await client.end();
  }
}

/**
 * The PostgreSQL client tool `name` (pg_dump, pg_restore) for the server of `url`: Debian's
 * versioned binary of the server's major version when installed, else the one on PATH when it is
 * at least as new (pg_dump refuses older-than-server; a newer one writes what the server reads).
 * @throws Error naming the versions when no suitable tool is there.
 */
export async function pgTool(name: 'pg_dump' | 'pg_restore', url: string): Promise<string> {
  const major = await serverMajor(url);
  const versioned = `/usr/lib/postgresql/${major}/bin/${name}`;
  if (existsSync(versioned)) return versioned;
  const { stdout } = await run(name, ['--version']).catch(() => ({ stdout: '' }));
  const found = Number(/(\d+)\.\d+/.exec(stdout)?.[1]);
  if (found >= major) return name;
  throw new Error(
    `${name} for PostgreSQL ${major} is needed (found: ${stdout.trim() || 'none'}): ` +
      `apt-get install -y postgresql-client-${major}`,
  );
}

/**
 * `pg_dump --format=custom` of the database of `url` into `file`: one consistent snapshot of the
 * whole database (pg_dump reads in one REPEATABLE READ transaction) while it is being written.
 * Resolves with the dump's size in bytes.
 */
export async function dumpDatabase(url: string, file: string): Promise<number> {
  const tool = await pgTool('pg_dump', url);
  await run(tool, ['--format=custom', '--no-owner', `--file=${file}`, `--dbname=${url}`], {
    timeout: TOOL_TIMEOUT_MS,
  });
  return (await stat(file)).size;
}

/** A database restored from a dump, on the test server. */
export interface RestoredDatabase {
  url: string;
  name: string;
  drop: () => Promise<void>;
}

/**
 * Restores the dump `file` into a new, empty database on the server of `adminUrl` (never into the
 * database it was taken from), stopping at the first error. The name follows the test databases'
 * pattern (`df_test_<pid>_…`), so a killed run's leftovers are swept by the next.
 */
export async function restoreDatabase(adminUrl: string, file: string): Promise<RestoredDatabase> {
  const name = `df_test_${process.pid}_restore_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${escapeIdentifier(name)} TEMPLATE template0`);
  } finally {
    await admin.end();
  }
  const url = withDatabaseName(adminUrl, name);
  const tool = await pgTool('pg_restore', url);
  await run(tool, ['--exit-on-error', '--no-owner', `--dbname=${url}`, file], { timeout: TOOL_TIMEOUT_MS });
  return { url, name, drop: () => dropDatabase(adminUrl, name) };
}
