import type { ActivityDeps } from '../activities/index.ts';
import { createHttpClient } from '../activities/http.ts';
import type { Config } from './config.ts';
import type { PrismaClient } from './db.ts';
import type { Logger } from './logger.ts';

/**
 * The production wiring of activity dependencies from configuration. Secrets are looked up in
 * the environment by reference at call time, never stored (R2).
 */
export function createActivityDeps(config: Config, prisma: PrismaClient, log: Logger): ActivityDeps {
  return {
    prisma,
    http: createHttpClient(config.http),
    log,
    now: () => new Date(),
    secret: (ref) => process.env[ref],
    leaseTtlMs: config.runs.leaseTtlMs,
    idempotencyRetentionMs: config.runs.idempotencyRetentionMs,
    partnerPageLimit: config.partner.pageLimit,
  };
}
