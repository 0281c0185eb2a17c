/**
 * The first check of a database a command or a process opens: one line naming what is wrong (not
 * there, not migrated, unreachable) instead of a driver error at its first statement.
 */
import type { Config } from '../runtime/config.ts';
import type { PrismaClient } from '../db/client.ts';
import { connectionProblem } from '../db/connection.ts';
import { probeMigrated, probeSearchPath } from '../db/probe.ts';
import { readerOf, type SqlConnection } from '../db/sql-reader.ts';
import { UserFacingError } from '../runtime/errors.ts';
import { redactUrl } from '../runtime/redact.ts';

/** The Prisma client as a connection to check: its raw queries, closed by disconnecting. */
export function prismaConnection(prisma: PrismaClient): SqlConnection {
  return { ...readerOf({ prisma }), close: () => prisma.$disconnect().catch(() => undefined) };
}

/**
 * Runs a first statement on `db` and closes it when that fails, so a command reports a database it
 * cannot use in one line, whichever client it opened.
 * @throws UserFacingError when the database is unreachable, missing or not migrated, when its TLS
 * or pooler settings are wrong (db/connection.ts), or when the engine's tables are off the
 * search_path behind a transaction pooler.
 */
export async function checkDatabase(db: SqlConnection, url: string, config: Config): Promise<void> {
  const where = redactUrl(url);
  const origin = config.database.url ? 'DATABASE_URL' : 'the embedded PostgreSQL: is `npm start` running?';
  try {
    await probeMigrated(db);
  } catch (err) {
    // Decided by SQLSTATE / Prisma code, never by message text.
    const { codeOf } = await import('../activities/errors.ts');
    const code = codeOf(err);
    const missingTable = code === '42P01' || code === 'P2021';
    // Behind a transaction pooler the search_path comes from the role, not from the connection.
    const searchPath =
      missingTable && config.database.pooling === 'transaction'
        ? await probeSearchPath(db).catch(() => undefined)
        : undefined;
    await db.close();
    const problem = connectionProblem(err, url, config.database.pooling);
    if (problem) {
      throw new UserFacingError(
        `cannot connect to PostgreSQL at ${where}: ${problem}`,
        'DB_CONNECTION_SETTING',
      );
    }
    if (searchPath !== undefined) {
      throw new UserFacingError(
        `database at ${where}: the engine's tables are not on the search_path (${searchPath}) of sessions through the pooler: DURABLE_FETCH_DB_POOLING=transaction sends no start-up options, so set it on the role: ALTER ROLE <user> IN DATABASE <db> SET search_path = durable_fetch, public (docs/database.md)`,
        'DB_SEARCH_PATH',
      );
    }
    if (code === '3D000' || code === 'P1003') {
      throw new UserFacingError(
        `database at ${where} does not exist: run \`durable-fetch migrate\``,
        'DB_MISSING',
      );
    }
    if (missingTable) {
      throw new UserFacingError(
        `database at ${where} is not migrated: run \`durable-fetch migrate\``,
        'DB_NOT_MIGRATED',
      );
    }
    throw new UserFacingError(
      `cannot reach PostgreSQL at ${where} (${origin})${code ? `: ${code}` : ''}`,
      'DB_UNREACHABLE',
      { cause: err },
    );
  }
}
