import type { ActivityDeps } from './index.ts';
import { createHttpClient } from './http.ts';
import type { JobRegistry } from './job-api/registry.ts';
import type { Config } from '../runtime/config.ts';
import type { PrismaClient } from '../db/client.ts';
import type { Logger } from '../runtime/logger.ts';
import { defaultJobs } from '../jobs/registry.ts';
import { createMetrics, type Metrics } from '../runtime/metrics/metrics.ts';
import { cachedDownstreams } from '../db/ledger/downstreams.ts';
import { parseMasterKey } from '../runtime/credential-cipher.ts';
import { createTokenProvider } from './credentials/token-provider.ts';

// The shape of credentials references lives in runtime/ (jobs check it too); re-exported here.
export { isSecretRef, SECRET_REF_PREFIX, SECRET_REF_RE } from '../runtime/secret-refs.ts';
import { isSecretRef } from '../runtime/secret-refs.ts';

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
  const secret = (ref: string) => (isSecretRef(ref) ? process.env[ref] : undefined);
  // OAuth2 tokens need the credentials key; a bad one stops the process here, at start.
  const keyText = process.env.DF_SECRET_CREDENTIALS_KEY;
  const tokens = keyText
    ? createTokenProvider({
        prisma,
        key: parseMasterKey(keyText),
        secret,
        ...(config.crashPoint ? { crashPoint: config.crashPoint } : {}),
      })
    : undefined;
  return {
    metrics,
    prisma,
    jobs,
    http: createHttpClient(config.http),
    log,
    now: () => new Date(),
    secret,
    ...(tokens ? { tokens } : {}),
    leaseTtlMs: config.runs.leaseTtlMs,
    idempotencyRetentionMs: config.runs.idempotencyRetentionMs,
    downstreams: cachedDownstreams(prisma),
    taskQueue: config.temporal.taskQueue,
    partnerPageLimit: config.partner.pageLimit,
    ...(config.crashPoint ? { crashPoint: config.crashPoint } : {}),
  };
}
