import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../prisma/generated/client.ts';

export type { PrismaClient };

/**
 * The process's one PrismaClient (Prisma's guidance), on the node-postgres driver adapter.
 * Connects lazily; call `$disconnect()` on shutdown.
 */
export function createPrisma(connectionString: string, options: { max?: number } = {}): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString, max: options.max ?? 10 }) });
}
