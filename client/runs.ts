/**
 * Reading runs: the FetchRun rows (R2 job records) in PostgreSQL, the system of record.
 */
import type { FetchRun, RunStatus } from '../prisma/generated/client.ts';
import { parseWorkflowId } from '../contract/business-key.ts';
import type { DurableFetchContext } from './start-fetch.ts';
import { isUuid } from './ids.ts';
import { listLimit, type ReadContext, readerOf } from './sql-reader.ts';

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
 * One run by its FetchRun id, its workflow id (`fetch/fetch-records/<source>/<date>`) or its
 * business key written `<source>/<date>`. Undefined when there is none. Read-only.
 */
export async function getRun(
  ctx: Pick<DurableFetchContext, 'prisma'>,
  id: string,
): Promise<FetchRun | undefined> {
  if (isUuid(id)) return (await ctx.prisma.fetchRun.findUnique({ where: { id } })) ?? undefined;
  const key = parseWorkflowId(id) ?? parseWorkflowId(`fetch/fetch-records/${id}`);
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
 * Every FetchRun column under its model field name, in the model's order (what `findMany`
 * returns), for the statements that read runs through a reader (client/sql-reader.ts).
 */
const RUN_COLUMNS = `id, job_type AS "jobType", source_id AS "sourceId", business_date AS "businessDate",
  payload, idempotency_key AS "idempotencyKey", status, attempt, created_at AS "createdAt",
  scheduled_at AS "scheduledAt", started_at AS "startedAt", finished_at AS "finishedAt",
  next_run_at AS "nextRunAt", lease_token AS "leaseToken", lease_until AS "leaseUntil",
  error_class AS "errorClass", error_message AS "errorMessage", correlation_id AS "correlationId",
  workflow_id AS "workflowId", workflow_run_id AS "workflowRunId", pages_stored AS "pagesStored",
  records_stored AS "recordsStored", cursor, updated_at AS "updatedAt"`;

// A filter left out is a NULL parameter: one statement for every combination of filters.
const LIST_RUNS_SQL = `SELECT ${RUN_COLUMNS} FROM fetch_run
WHERE ($1::text IS NULL OR job_type = $1)
  AND ($2::text IS NULL OR source_id = $2)
  AND ($3::run_status IS NULL OR status = $3)
ORDER BY business_date DESC, created_at DESC
LIMIT $4`;

/**
 * Runs, newest business date first (then newest created). Read-only. Reads through the app's
 * PrismaClient or any reader (the CLI's); the rows are the same FetchRun objects either way.
 */
export async function listRuns(ctx: ReadContext, filter: ListRunsFilter = {}): Promise<FetchRun[]> {
  return readerOf(ctx).query<FetchRun>(LIST_RUNS_SQL, [
    filter.jobType ?? null,
    filter.sourceId ?? null,
    filter.status ?? null,
    listLimit(filter.limit),
  ]);
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
