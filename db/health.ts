/**
 * Health statements (R10): the database's own health counts (outbox, dead letters,
 * compensations, credentials) and the `queue_sample` history the sampler keeps for `status`.
 */
import type { PrismaClient } from '../prisma/generated/client.ts';

export interface DatabaseHealth {
  outboxPending: number;
  outboxOldestPendingAgeSeconds: number;
  outboxDead: number;
  outboxRetrying: number;
  deadLettersOpen: number;
  compensationsNeedsManual: number;
  /** Strays (effects at a partner the ledger did not expect) not yet voided or settled. */
  straysUnsettled: number;
  /** OAuth2 credentials whose provider refused their refresh token: runs using them fail. */
  credentialsNeedingReauthorization: number;
}

/** The database's health counts (one round trip). Read-only. */
export async function databaseHealth(prisma: Pick<PrismaClient, '$queryRaw'>): Promise<DatabaseHealth> {
  const [row] = await prisma.$queryRaw<
    {
      pending: bigint;
      oldest: number | null;
      dead: bigint;
      retrying: bigint;
      letters: bigint;
      manual: bigint;
      strays: bigint;
      reauth: bigint;
    }[]
  >`
    SELECT (SELECT count(*) FROM outbox_event WHERE status = 'pending') AS pending,
           (SELECT EXTRACT(EPOCH FROM now() - min(created_at))::float8 FROM outbox_event WHERE status = 'pending') AS oldest,
           (SELECT count(*) FROM outbox_event WHERE status = 'dead') AS dead,
           (SELECT count(*) FROM outbox_event WHERE status = 'pending' AND attempts > 0) AS retrying,
           (SELECT count(*) FROM dead_letter WHERE status = 'open') AS letters,
           (SELECT count(*) FROM downstream_action WHERE state = 'needs_manual') AS manual,
           (SELECT count(*) FROM downstream_action
             WHERE stray_of IS NOT NULL AND state NOT IN ('compensated', 'not_applied', 'resolved')) AS strays,
           (SELECT count(*) FROM credential WHERE status = 'needs_reauthorization') AS reauth`;
  return {
    outboxPending: Number(row?.pending ?? 0),
    outboxOldestPendingAgeSeconds: Math.max(0, row?.oldest ?? 0),
    outboxDead: Number(row?.dead ?? 0),
    outboxRetrying: Number(row?.retrying ?? 0),
    deadLettersOpen: Number(row?.letters ?? 0),
    compensationsNeedsManual: Number(row?.manual ?? 0),
    straysUnsettled: Number(row?.strays ?? 0),
    credentialsNeedingReauthorization: Number(row?.reauth ?? 0),
  };
}

/** One task queue's backlog at one moment, as the sampler stores it. */
export interface QueueSampleRow {
  taskQueue: string;
  type: string;
  backlog: number;
  oldestAgeSeconds: number;
  addRate: number;
  dispatchRate: number;
}

/** Stores one sample per task queue and type (now, by the database's default). Not idempotent. */
export async function insertQueueSamples(
  prisma: Pick<PrismaClient, 'queueSample'>,
  samples: readonly QueueSampleRow[],
): Promise<void> {
  await prisma.queueSample.createMany({
    data: samples.map((s) => ({
      taskQueue: s.taskQueue,
      type: s.type,
      backlog: BigInt(s.backlog),
      oldestAgeSeconds: s.oldestAgeSeconds,
      addRate: s.addRate,
      dispatchRate: s.dispatchRate,
    })),
  });
}

/** Drops queue samples older than a day (`status` looks back minutes). Idempotent. */
export async function deleteOldQueueSamples(prisma: Pick<PrismaClient, '$executeRaw'>): Promise<void> {
  await prisma.$executeRaw`DELETE FROM queue_sample WHERE at < now() - interval '1 day'`;
}
