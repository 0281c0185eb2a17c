/**
 * Reading runs: the FetchRun rows (R2 job records) in PostgreSQL, the system of record.
 */
import type { FetchRun, RunStatus } from '../prisma/generated/client.ts';
import { type BusinessKey, isBusinessDate, isSourceId, parseWorkflowId } from '../contract/business-key.ts';
import { UserFacingError } from '../runtime/errors.ts';
import type { DurableFetchContext } from './start-fetch.ts';
import { isUuid } from './ids.ts';
import { listRunRows } from '../db/listings.ts';
import { type ReadContext, readerOf } from '../db/sql-reader.ts';

export type { FetchRun, RunStatus };

/** Statuses a run does not leave by itself (a new execution of its key may take it up again). */
export const FINISHED_STATUSES: readonly RunStatus[] = [
  'succeeded',
  'dead_lettered',
  'cancelled',
  'compensated',
];

/** Statuses of a run that is not over: queued, running, or waiting to retry. */
export const OPEN_RUN_STATUSES: readonly RunStatus[] = ['queued', 'running', 'retry_wait'];

/**
 * The business key a run name `<source>/<date>` stands for: the source's own job type (read from
 * its row; a removed source keeps it), so the name finds the run of whichever job the source runs.
 * Undefined when `name` is not of that shape.
 * @throws UserFacingError NOT_FOUND when there is no such source.
 */
async function businessKeyOfName(
  ctx: Pick<DurableFetchContext, 'prisma'>,
  name: string,
): Promise<BusinessKey | undefined> {
  const parts = name.split('/');
  if (parts.length !== 2) return undefined;
  const [sourceId, businessDate] = parts as [string, string];
  if (!isSourceId(sourceId) || !isBusinessDate(businessDate)) return undefined;
  // Imported here: db/sources.ts loads the Prisma runtime, which `runs list` and help never need.
  const { findSource } = await import('../db/sources.ts');
  const source = await findSource(ctx.prisma, sourceId);
  if (!source) throw new UserFacingError(`no run '${name}': no source '${sourceId}'`, 'NOT_FOUND');
  return { jobType: source.jobType, sourceId, businessDate };
}

/**
 * One run by its FetchRun id, its workflow id (`fetch/<jobType>/<source>/<date>`) or its
 * business key written `<source>/<date>` (the run of the source's job). Undefined when there is
 * none. Read-only.
 * @throws UserFacingError NOT_FOUND when `<source>/<date>` names a source that does not exist.
 */
export async function getRun(
  ctx: Pick<DurableFetchContext, 'prisma'>,
  id: string,
): Promise<FetchRun | undefined> {
  if (isUuid(id)) return (await ctx.prisma.fetchRun.findUnique({ where: { id } })) ?? undefined;
  const key = parseWorkflowId(id) ?? (await businessKeyOfName(ctx, id));
  if (!key) return undefined;
  const run = await ctx.prisma.fetchRun.findUnique({
    where: {
      jobType_sourceId_businessDate: {
        jobType: key.jobType,
        sourceId: key.sourceId,
        businessDate: new Date(`${key.businessDate}T00:00:00Z`),
      },
    },
  });
  return run ?? undefined;
}

export interface ListRunsFilter {
  /** Only runs of this job type, e.g. `exchange-rates`. */
  jobType?: string;
  sourceId?: string;
  status?: RunStatus;
  /** Newest first; default 50, at most 1000. */
  limit?: number;
}

/**
 * Runs, newest business date first (then newest created). Read-only. Reads through the app's
 * PrismaClient or any reader (the CLI's); the rows are the same FetchRun objects either way.
 */
export async function listRuns(ctx: ReadContext, filter: ListRunsFilter = {}): Promise<FetchRun[]> {
  return listRunRows(readerOf(ctx), filter);
}

/** `YYYY-MM-DD` of a DATE column. */
export function formatDate(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/**
 * Requests cancellation of a run (by FetchRun id, workflow id or `<source>/<date>`) — the same
 * call the Temporal Web UI makes. The run stops at its next cancellation point (a partner call is
 * aborted) and records `cancelled`. Returns the run as it was when asked, or undefined when there
 * is no such run. A run already finished is left alone.
 * @throws UserFacingError NOT_FOUND when `<source>/<date>` names a source that does not exist.
 */
export async function cancelRun(
  ctx: Pick<DurableFetchContext, 'prisma' | 'temporal'>,
  id: string,
): Promise<{ run: FetchRun; requested: boolean } | undefined> {
  const run = await getRun(ctx, id);
  if (!run) return undefined;
  if (FINISHED_STATUSES.includes(run.status)) {
    return { run, requested: false };
  }
  await ctx.temporal.workflow.getHandle(run.workflowId).cancel();
  return { run, requested: true };
}
