import { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import { PrismaClient } from '../prisma/generated/client.ts';
import { poolConfig, type PoolOptions } from './pool-config.ts';

export type { PrismaClient };
export { CLI_POOL_SIZE, CONNECT_TIMEOUT_MS, poolConfig, type PoolOptions } from './pool-config.ts';

/**
 * The process's one PrismaClient (Prisma's guidance), on the node-postgres driver adapter.
 * Connects lazily; call `$disconnect()` on shutdown.
 */
export function createPrisma(connectionString: string, options: PoolOptions = {}): PrismaClient {
  return prismaOn(poolConfig(connectionString, options));
}

/**
 * A PrismaClient on `pool` (a pool, or a pool's configuration) with the options every process
 * uses. `errorFormat: 'minimal'`: the other formats capture a stack trace for every query, to
 * point an error at its caller's source line (about 0.4 ms of CPU per store transaction); errors
 * here are classified by their code and logged by the activity that saw them, with its own name.
 */
export function prismaOn(pool: pg.Pool | pg.PoolConfig): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg(pool), errorFormat: 'minimal' });
}
