import pg from 'pg';
import { driverSql, LendingPrismaPg, lendPool } from './transaction.ts';
import { PrismaClient } from '../prisma/generated/client.ts';
import { type Pooling, tlsConnection } from './connection.ts';
import { engineSessionOptions, poolConfig, type PoolOptions, transactionSettings } from './pool-config.ts';
import { statementNamer } from './statement-names.ts';

export type { PrismaClient };
export {
  CLI_POOL_SIZE,
  CONNECT_TIMEOUT_MS,
  STATEMENT_TIMEOUT_MS,
  poolConfig,
  type PoolOptions,
} from './pool-config.ts';

/** How a client talks to the database: its pool, and whether it names (prepares) its statements. */
export interface ClientOptions extends PoolOptions {
  /**
   * Each connection prepares a statement once (db/statement-names.ts). Default true; off for a
   * pooler that cannot keep a session's prepared statements (PgBouncer in transaction mode before
   * 1.21, or without `max_prepared_statements`): `DURABLE_FETCH_DB_PREPARED_STATEMENTS=false`.
   * Always off with `pooling: 'transaction'`.
   */
  preparedStatements?: boolean;
}

/** How {@link prismaOn} opens its pool and transactions. */
export interface PrismaOnOptions {
  /** See {@link ClientOptions}. Default true. */
  preparedStatements?: boolean;
  /**
   * `transaction`: no named statements, and no start-up `options` on a pool opened from a
   * configuration (db/connection.ts). Default `session`.
   */
  pooling?: Pooling;
  /** A statement each transaction sends first, on its own connection (db/pool-config.ts `transactionSettings`). */
  transactionSettings?: string | undefined;
}

/**
 * The process's one PrismaClient (Prisma's guidance), on the node-postgres driver adapter.
 * Connects lazily; call `$disconnect()` on shutdown.
 */
export function createPrisma(connectionString: string, options: ClientOptions = {}): PrismaClient {
  const { preparedStatements, ...pool } = options;
  return prismaOn(poolConfig(connectionString, pool), {
    preparedStatements,
    pooling: pool.pooling,
    transactionSettings: transactionSettings(pool),
  });
}

/** One namer for every client of the process: a text has the same name on each connection. */
const statementName = statementNamer();

/**
 * A PrismaClient on `pool` (a pool, or a pool's configuration) with the options every process
 * uses. `errorFormat: 'minimal'`: the other formats capture a stack trace for every query, to
 * point an error at its caller's source line (about 0.4 ms of CPU per store transaction); errors
 * here are classified by their code and logged by the activity that saw them, with its own name.
 * The engine's own statements may skip the client on the same pool (db/transaction.ts
 * `engineSql`, `inTransaction`). `$disconnect()` ends that pool too: the client is not for use
 * after it.
 */
export function prismaOn(
  pool: pg.Pool | pg.PoolConfig,
  { preparedStatements = true, pooling = 'session', transactionSettings: first }: PrismaOnOptions = {},
): PrismaClient {
  // A transaction pooler runs consecutive statements of one client on different server sessions:
  // a statement prepared on one is unknown to the next.
  const name = preparedStatements && pooling === 'session' ? statementName : undefined;
  const owned = !(pool instanceof pg.Pool);
  // A pool given ready-made is the caller's to configure.
  const driverPool = pool instanceof pg.Pool ? pool : new pg.Pool(driverConfig(pool, pooling));
  // An idle connection the server closes must not crash the process (Prisma's adapter does the
  // same for a pool of its own): the next query on it fails instead.
  if (owned) driverPool.on('error', () => undefined);
  // Each transaction started by `inTransaction` lends its connection to it.
  const adapter = new LendingPrismaPg(driverPool, {
    statementNameGenerator: name,
    disposeExternalPool: owned,
    transactionSettings: first,
  });
  const prisma = new PrismaClient({ adapter, errorFormat: 'minimal' });
  lendPool(prisma, driverSql(driverPool, { name }));
  return prisma;
}

/**
 * A pool configuration with what every engine connection needs that it does not say itself: its
 * TLS settings read from the URL as libpq reads them (db/connection.ts), unless `ssl` is given,
 * and the engine's search_path, unless `options` is given or a transaction pooler would refuse it.
 */
function driverConfig(pool: pg.PoolConfig, pooling: Pooling): pg.PoolConfig {
  const tls = pool.ssl === undefined && pool.connectionString ? tlsConnection(pool.connectionString) : {};
  const options =
    pool.options ?? (pooling === 'session' ? engineSessionOptions(pool.connectionString ?? '') : undefined);
  return { ...pool, ...tls, ...(options === undefined ? {} : { options }) };
}
