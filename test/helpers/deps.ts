import { pino } from 'pino';
import type { ActivityDeps } from '../../activities/index.ts';
import { createHttpClient } from '../../activities/http.ts';
import type { Prisma, PrismaClient } from '../../prisma/generated/client.ts';
import { findDownstream } from '../../db/ledger/downstreams.ts';
import { defaultJobs } from '../../jobs/registry.ts';
import { createMetrics } from '../../runtime/metrics/metrics.ts';

/** Activity dependencies for tests: real HTTP and database, a silent logger, test-sized limits. */
export function testDeps(prisma: PrismaClient, overrides: Partial<ActivityDeps> = {}): ActivityDeps {
  return {
    prisma,
    jobs: defaultJobs(),
    http: createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 5_000 }),
    log: pino({ level: 'silent' }),
    now: () => new Date(),
    secret: () => undefined,
    leaseTtlMs: 60_000,
    idempotencyRetentionMs: 86_400_000,
    downstreams: (id) => findDownstream(prisma, id),
    // A test worker (test/helpers/temporal.ts) puts its own queue here.
    taskQueue: 'test',
    partnerPageLimit: 50,
    metrics: createMetrics(),
    ...overrides,
  };
}

/** Registers a source pointing at `baseUrl` (pages of 100 records unless `extra` says otherwise). */
export async function createSource(
  prisma: PrismaClient,
  id: string,
  baseUrl: string,
  extra: Omit<Prisma.SourceUncheckedCreateInput, 'id' | 'name' | 'baseUrl'> = {},
): Promise<void> {
  await prisma.source.create({ data: { id, name: id, baseUrl, timezone: 'UTC', pageSize: 100, ...extra } });
}
