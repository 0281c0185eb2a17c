import { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import { PrismaClient } from '../prisma/generated/client.ts';
import { poolConfig, type PoolOptions } from './pool-config.ts';
import { statementNamer } from './statement-names.ts';

export type { PrismaClient };
export { CLI_POOL_SIZE, CONNECT_TIMEOUT_MS, poolConfig, type PoolOptions } from './pool-config.ts';

/** How a client talks to the database: its pool, and whether it names (prepares) its statements. */
export interface ClientOptions extends PoolOptions {
  /**
   * Each connection prepares a statement once (worker/statement-names.ts). Default true; off for a
   * pooler that cannot keep a session's prepared statements (PgBouncer in transaction mode before
   * 1.21, or without `max_prepared_statements`): `DURABLE_FETCH_DB_PREPARED_STATEMENTS=false`.
   */
  preparedStatements?: boolean;
}

/**
 * The process's one PrismaClient (Prisma's guidance), on the node-postgres driver adapter.
 * Connects lazily; call `$disconnect()` on shutdown.
 */
export function createPrisma(connectionString: string, options: ClientOptions = {}): PrismaClient {
  const { preparedStatements, ...pool } = options;
  return prismaOn(poolConfig(connectionString, pool), { preparedStatements });
}

/** One namer for every client of the process: a text has the same name on each connection. */
const statementName = statementNamer();

/**
 * A PrismaClient on `pool` (a pool, or a pool's configuration) with the options every process
 * uses. `errorFormat: 'minimal'`: the other formats capture a stack trace for every query, to
 * point an error at its caller's source line (about 0.4 ms of CPU per store transaction); errors
 * here are classified by their code and logged by the activity that saw them, with its own name.
 */
export function prismaOn(
  pool: pg.Pool | pg.PoolConfig,
  { preparedStatements = true }: Pick<ClientOptions, 'preparedStatements'> = {},
): PrismaClient {
  const adapter = new PrismaPg(pool, preparedStatements ? { statementNameGenerator: statementName } : {});
  return new PrismaClient({ adapter, errorFormat: 'minimal' });
}
