/**
 * What a run of a test left, read back from the engine's tables: shared by the package's kit
 * (testing/index.ts) and the engine's own test helpers.
 */
import type { FetchRun, Prisma, PrismaClient } from '../prisma/generated/client.ts';

/** The error type at the bottom of a workflow failure's cause chain ('Cancelled' when none). */
export function failureType(err: unknown): string {
  let type: string | undefined;
  for (let e = err as { cause?: unknown; type?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.type === 'string') type = e.type;
  }
  return type ?? 'Cancelled';
}

/** A run's row, its outbox events in order, and its downstream ledger in order. */
export interface RunLeftovers {
  row: FetchRun;
  events: { id: string; topic: string; payload: Prisma.JsonValue }[];
  actions: { action: string; state: string; partnerId: string | null; attempts: number }[];
}

/** The leftovers of the run of (source, date). @throws when there is no such run. */
export async function runLeftovers(
  prisma: PrismaClient,
  sourceId: string,
  date: string,
): Promise<RunLeftovers> {
  const row = await prisma.fetchRun.findFirstOrThrow({
    where: { sourceId, businessDate: new Date(`${date}T00:00:00Z`) },
  });
  const events = await prisma.outboxEvent.findMany({
    where: { aggregateType: 'fetch_run', aggregateId: row.id },
    select: { id: true, topic: true, payload: true },
    orderBy: { seq: 'asc' },
  });
  const actions = await prisma.downstreamAction.findMany({
    where: { fetchRunId: row.id },
    select: { action: true, state: true, partnerId: true, attempts: true },
    orderBy: [{ round: 'asc' }, { step: 'asc' }],
  });
  return { row, events, actions };
}
