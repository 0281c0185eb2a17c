/**
 * The first statement a process or a command sends, to tell a database it cannot use from one it
 * can before doing anything else: whether PostgreSQL answers at all, and whether the app's
 * database is there and migrated. Read-only.
 */
import type * as Pg from 'pg';
import { ENGINE_SCHEMA } from '../contract/engine-schema.ts';
import type { SqlReader } from './sql-reader.ts';

/**
 * `SELECT 1` on `client`: resolves once the server answers a statement (a connection accepted is
 * not yet a server that answers). @throws the driver's error.
 */
export async function pingServer(client: Pick<Pg.ClientBase, 'query'>): Promise<void> {
  await client.query('SELECT 1');
}

/**
 * Reads one row of `fetch_run` (any, or none): fails with SQLSTATE 3D000 (Prisma P1003) when the
 * database does not exist, 42P01 (P2021) when it is not migrated, a connection error when
 * unreachable. @throws the reader's error.
 */
export async function probeMigrated(reader: SqlReader): Promise<void> {
  await reader.query('SELECT 1 FROM fetch_run LIMIT 1', []);
}

/**
 * The session's search_path when the engine's tables exist but are not on it — a session behind a
 * transaction pooler, which gets no start-up options, on a role without the engine's search_path —
 * else undefined (they are on it, or not migrated). Read-only. @throws the reader's error.
 */
export async function probeSearchPath(reader: SqlReader): Promise<string | undefined> {
  const [row] = await reader.query<{ migrated: boolean; visible: boolean; search_path: string }>(
    `SELECT to_regclass('${ENGINE_SCHEMA}.fetch_run') IS NOT NULL AS migrated,
            to_regclass('fetch_run') IS NOT NULL AS visible,
            current_setting('search_path') AS search_path`,
    [],
  );
  return row?.migrated && !row.visible ? row.search_path : undefined;
}
