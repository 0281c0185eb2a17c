/**
 * What the database holds for one run, read in one REPEATABLE READ snapshot so that a run being
 * written meanwhile cannot produce a false mismatch.
 */
import type { AnyJob } from '../../activities/job-api/define.ts';
import type { JobRegistry } from '../../activities/job-api/registry.ts';
import {
  type DownstreamAction,
  type FetchRun,
  Prisma,
  type PrismaClient,
  type Source,
} from '../../prisma/generated/client.ts';
import { formatDate } from '../runs.ts';

/** What the database holds for one run, read in one snapshot. */
export interface Snapshot {
  run: FetchRun;
  source: Source;
  events: { id: string; topic: string; status: string; payload: Prisma.JsonValue }[];
  /** The run's job, when this process knows its type. */
  job: AnyJob | undefined;
  /** Ids listed by the run's page events that have a business row of the source. */
  existing: Set<string>;
  /** Ids of the business rows pointing at the run. */
  ownRows: string[];
  actions: DownstreamAction[];
}

/** The snapshot of run `runId`; undefined when the run is gone. Read-only. */
export async function readSnapshot(
  prisma: PrismaClient,
  jobs: JobRegistry,
  runId: string,
): Promise<Snapshot | undefined> {
  return prisma.$transaction(
    async (tx) => {
      const run = await tx.fetchRun.findUnique({ where: { id: runId } });
      if (!run) return undefined;
      const source = await tx.source.findUniqueOrThrow({ where: { id: run.sourceId } });
      const events = await tx.outboxEvent.findMany({
        where: { aggregateType: 'fetch_run', aggregateId: run.id },
        select: { id: true, topic: true, status: true, payload: true },
        orderBy: { seq: 'asc' },
      });
      const job = jobs.find(run.jobType);
      const records = job?.reconcile;
      const listed = [...new Set(events.flatMap((e) => idsOf(job, e) ?? []))];
      const key = { sourceId: run.sourceId, fetchRunId: run.id, businessDate: formatDate(run.businessDate) };
      const found = records && listed.length > 0 ? await records.existingIds(tx, key, listed) : [];
      const own = records ? await records.runIds(tx, key) : [];
      const actions = await tx.downstreamAction.findMany({
        where: { fetchRunId: run.id },
        orderBy: [{ round: 'asc' }, { step: 'asc' }],
      });
      return { run, source, job, events, existing: new Set(found), ownRows: own, actions };
    },
    { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead, maxWait: 5_000, timeout: 60_000 },
  );
}

/** The record ids a page event lists (per its job); undefined for any other event. */
export function idsOf(
  job: AnyJob | undefined,
  event: { topic: string; payload: Prisma.JsonValue },
): string[] | undefined {
  const ids = job?.reconcile?.listedIds(event);
  return ids === undefined ? undefined : [...ids];
}
