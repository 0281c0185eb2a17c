/**
 * `source` reads of the engine at run time (R2): a run re-reads its source at every step, so an
 * operator's change (disabled, paused, new settings) takes effect on the next step.
 */
import type { Prisma, PrismaClient, Source } from '../prisma/generated/client.ts';

/** The source `sourceId`, or null when it does not exist. Read-only. */
export async function findSource(db: Pick<PrismaClient, 'source'>, sourceId: string): Promise<Source | null> {
  return db.source.findUnique({ where: { id: sourceId } });
}

/** Whether an operator paused the source, and why; `paused: false` when it does not exist. */
export async function sourcePause(
  db: Pick<PrismaClient, 'source'>,
  sourceId: string,
): Promise<{ paused: boolean; reason: string | null }> {
  const source = await db.source.findUnique({
    where: { id: sourceId },
    select: { pausedAt: true, pausedReason: true },
  });
  return { paused: source?.pausedAt != null, reason: source?.pausedReason ?? null };
}

/** Enabled sources whose job is none of `jobTypes`, by id. Read-only. */
export async function enabledSourcesOfOtherJobs(
  db: Pick<PrismaClient, 'source'>,
  jobTypes: readonly string[],
): Promise<{ id: string; jobType: string }[]> {
  return db.source.findMany({
    where: { enabled: true, jobType: { notIn: [...jobTypes] } },
    select: { id: true, jobType: true },
    orderBy: { id: 'asc' },
  });
}

/** The source row, locked for the rest of the transaction; undefined when there is none. */
export async function lockSource(tx: Prisma.TransactionClient, id: string): Promise<Source | undefined> {
  const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM source WHERE id = ${id} FOR UPDATE`;
  if (locked.length === 0) return undefined;
  return tx.source.findUniqueOrThrow({ where: { id } });
}
