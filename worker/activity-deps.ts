import type { ActivityDeps } from '../activities/index.ts';
import { createHttpClient } from '../activities/http.ts';
import type { JobRegistry } from '../activities/job-api/registry.ts';
import type { Config } from './config.ts';
import type { PrismaClient } from './db.ts';
import type { Logger } from '../runtime/logger.ts';
import { defaultJobs } from './jobs.ts';
import { createMetrics, type Metrics } from '../runtime/metrics.ts';

/**
 * Credentials references must name a variable of the secrets namespace: a source row can then
 * never send, say, DATABASE_URL or TEMPORAL_API_KEY to its partner as a bearer token.
 */
export const SECRET_REF_PREFIX = 'DF_SECRET_';

/** The shape of a credentials reference: the name of a `DF_SECRET_*` variable, never a secret. */
export const SECRET_REF_RE = /^DF_SECRET_[A-Z0-9_]+$/;

export function isSecretRef(ref: string): boolean {
  return SECRET_REF_RE.test(ref);
}

/**
 * The production wiring of activity dependencies from configuration. Secrets are looked up in
 * the environment by reference at call time, never stored (R2).
 */
export function createActivityDeps(
  config: Config,
  prisma: PrismaClient,
  log: Logger,
  metrics: Metrics = createMetrics(),
  jobs: JobRegistry = defaultJobs(),
): ActivityDeps {
  return {
    metrics,
    prisma,
    jobs,
    http: createHttpClient(config.http),
    log,
    now: () => new Date(),
    secret: (ref) => (isSecretRef(ref) ? process.env[ref] : undefined),
    leaseTtlMs: config.runs.leaseTtlMs,
    idempotencyRetentionMs: config.runs.idempotencyRetentionMs,
    partnerPageLimit: config.partner.pageLimit,
    ...(config.crashPoint ? { crashPoint: config.crashPoint } : {}),
  };
}
