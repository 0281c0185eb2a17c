import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../prisma/generated/client.ts';
import { poolConfig, type PoolOptions } from './pool-config.ts';

export type { PrismaClient };
export { CLI_POOL_SIZE, CONNECT_TIMEOUT_MS, poolConfig, type PoolOptions } from './pool-config.ts';

/**
 * The process's one PrismaClient (Prisma's guidance), on the node-postgres driver adapter.
 * Connects lazily; call `$disconnect()` on shutdown.
 */
export function createPrisma(connectionString: string, options: PoolOptions = {}): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg(poolConfig(connectionString, options)) });
}
