/**
 * What CLI commands share: configuration, the database and Temporal, opened on demand and closed
 * once, with user-facing errors when either cannot be reached.
 */
import type { Client } from '@temporalio/client';
import { type Config, databaseUrl, loadConfig } from '../runtime/config.ts';
import type { PoolOptions, PrismaClient } from '../db/client.ts';
import { UserFacingError } from '../runtime/errors.ts';
import { redactUrl } from '../runtime/redact.ts';
import { readerOf, type SqlConnection, type SqlReader } from '../client/sql-reader.ts';

export interface CliContext {
  config: Config;
  /**
   * The database, opened on the first call with `pool` (default: a command's small, unbounded
   * pool); later calls return the same client whatever they pass. Long-running processes (worker,
   * publisher) pass theirs before anything else opens it.
   */
  prisma(pool?: PoolOptions): Promise<PrismaClient>;
  /**
   * The database for read-only statements (client/sql-reader.ts): the Prisma client when one is
   * open already, else one plain node-postgres connection, which spares a listing the Prisma
   * runtime's start-up. Checked as {@link prisma} is; later calls return the same reader.
   */
  sql(): Promise<SqlReader>;
  temporal(): Promise<Client>;
  close(): Promise<void>;
}

/**
 * Opens nothing yet: each resource connects on first use, and its driver (Prisma, the Temporal SDK)
 * is imported only then, so a command loads only what it uses.
 */
export function createCliContext(config: Config = loadConfig()): CliContext {
  let prisma: PrismaClient | undefined;
  let temporal: Client | undefined;
  let sql: SqlConnection | undefined;
  return {
    config,
    async prisma(pool?: PoolOptions) {
      if (prisma) return prisma;
      const { CLI_POOL_SIZE, createPrisma } = await import('../db/client.ts');
      const url = databaseUrl(config);
      const client = createPrisma(url, {
        ...(pool ?? { max: CLI_POOL_SIZE }),
        preparedStatements: config.database.preparedStatements,
      });
      await checkDatabase(prismaConnection(client), url, config);
      prisma = client;
      return prisma;
    },
    async sql() {
      if (sql) return sql;
      if (prisma) return readerOf({ prisma });
      const { openPgReader } = await import('../client/pg-reader.ts');
      const url = databaseUrl(config);
      const connection = openPgReader(url);
      await checkDatabase(connection, url, config);
      sql = connection;
      return sql;
    },
    async temporal() {
      const { connectClient } = await import('../runtime/temporal.ts');
      temporal ??= await connectClient(config);
      return temporal;
    },
    async close() {
      await sql?.close();
      await prisma?.$disconnect();
      await temporal?.connection.close();
    },
  };
}

/** The Prisma client as a connection to check: its raw queries, closed by disconnecting. */
function prismaConnection(prisma: PrismaClient): SqlConnection {
  return { ...readerOf({ prisma }), close: () => prisma.$disconnect().catch(() => undefined) };
}

/**
 * Runs a first statement on `db` and closes it when that fails, so a command reports a database it
 * cannot use in one line, whichever client it opened.
 * @throws UserFacingError when the database is unreachable, missing or not migrated.
 */
export async function checkDatabase(db: SqlConnection, url: string, config: Config): Promise<void> {
  const where = redactUrl(url);
  const origin = config.database.url ? 'DATABASE_URL' : 'the embedded PostgreSQL: is `npm start` running?';
  try {
    await db.query('SELECT 1 FROM fetch_run LIMIT 1', []);
  } catch (err) {
    await db.close();
    // Decided by SQLSTATE / Prisma code, never by message text.
    const { codeOf } = await import('../activities/errors.ts');
    const code = codeOf(err);
    if (code === '3D000' || code === 'P1003') {
      throw new UserFacingError(
        `database at ${where} does not exist: run \`durable-fetch migrate\``,
        'DB_MISSING',
      );
    }
    if (code === '42P01' || code === 'P2021') {
      throw new UserFacingError(
        `database at ${where} is not migrated: run \`durable-fetch migrate\``,
        'DB_NOT_MIGRATED',
      );
    }
    throw new UserFacingError(
      `cannot reach PostgreSQL at ${where} (${origin})${code ? `: ${code}` : ''}`,
      'DB_UNREACHABLE',
      {
        cause: err,
      },
    );
  }
}
