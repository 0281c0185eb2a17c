/**
 * What CLI commands share: configuration, the database and Temporal, opened on demand and closed
 * once, with user-facing errors when either cannot be reached.
 */
import type { Client } from '@temporalio/client';
import { type Config, databaseUrl, loadConfig } from '../runtime/config.ts';
import type { PoolOptions, PrismaClient } from '../db/client.ts';
import { checkDatabase, prismaConnection } from '../client/database-check.ts';
import { readerOf, type SqlConnection, type SqlReader } from '../db/sql-reader.ts';

export interface CliContext {
  config: Config;
  /**
   * The database, opened on the first call with `pool` (default: a command's small, unbounded
   * pool); later calls return the same client whatever they pass. Long-running processes (worker,
   * publisher) pass theirs before anything else opens it.
   */
  prisma(pool?: PoolOptions): Promise<PrismaClient>;
  /**
   * The database for read-only statements (db/sql-reader.ts): the Prisma client when one is
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
        pooling: config.database.pooling,
      });
      await checkDatabase(prismaConnection(client), url, config);
      prisma = client;
      return prisma;
    },
    async sql() {
      if (sql) return sql;
      if (prisma) return readerOf({ prisma });
      const { openPgReader } = await import('../db/pg-reader.ts');
      const url = databaseUrl(config);
      const connection = openPgReader(url, config.database.pooling);
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
