/**
 * The first statement a process or a command sends, to tell a database it cannot use from one it
 * can before doing anything else: whether PostgreSQL answers at all, and whether the app's
 * database is there and migrated. Read-only.
 */
import type * as Pg from 'pg';
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
