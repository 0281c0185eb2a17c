/**
 * The read-only listings (`runs list`, `dlq list`): one statement each, run through a
 * {@link SqlReader} (db/sql-reader.ts), so the CLI reads them on a plain node-postgres connection
 * and library callers through their PrismaClient, with the same rows: every column under its model
 * field name, in the model's order (what `findMany` returns). A filter left out is a NULL
 * parameter: one statement serves every combination of filters.
 */
import type { DeadLetter, DeadLetterStatus, FetchRun, RunStatus } from '../prisma/generated/client.ts';
import type { SqlReader } from './sql-reader.ts';

/** How many rows a listing returns: `limit` within 1..1000, 50 when not given. */
export function listLimit(limit: number | undefined): number {
  return Math.min(Math.max(limit ?? 50, 1), 1000);
}

/** Every FetchRun column under its model field name, in the model's order. */
const RUN_COLUMNS = `id, job_type AS "jobType", source_id AS "sourceId", business_date AS "businessDate",
  payload, idempotency_key AS "idempotencyKey", status, attempt, created_at AS "createdAt",
  scheduled_at AS "scheduledAt", started_at AS "startedAt", finished_at AS "finishedAt",
  next_run_at AS "nextRunAt", lease_token AS "leaseToken", lease_until AS "leaseUntil",
  error_class AS "errorClass", error_message AS "errorMessage", correlation_id AS "correlationId",
  workflow_id AS "workflowId", workflow_run_id AS "workflowRunId", pages_stored AS "pagesStored",
  records_stored AS "recordsStored", cursor, window_since AS "windowSince",
  window_until AS "windowUntil", window_head AS "windowHead", watermark_seen AS "watermarkSeen",
  updated_at AS "updatedAt"`;

const LIST_RUNS_SQL = `SELECT ${RUN_COLUMNS} FROM fetch_run
WHERE ($1::text IS NULL OR job_type = $1)
  AND ($2::text IS NULL OR source_id = $2)
  AND ($3::run_status IS NULL OR status = $3)
ORDER BY business_date DESC, created_at DESC
LIMIT $4`;

/**
 * Runs, newest business date first (then newest created), at most {@link listLimit}`(limit)`.
 * Read-only.
 */
export async function listRunRows(
  reader: SqlReader,
  filter: { jobType?: string; sourceId?: string; status?: RunStatus; limit?: number },
): Promise<FetchRun[]> {
  return reader.query<FetchRun>(LIST_RUNS_SQL, [
    filter.jobType ?? null,
    filter.sourceId ?? null,
    filter.status ?? null,
    listLimit(filter.limit),
  ]);
}

const LIST_DEAD_LETTERS_SQL = `SELECT id, fetch_run_id AS "fetchRunId", job_type AS "jobType",
  source_id AS "sourceId", business_date AS "businessDate", workflow_id AS "workflowId",
  workflow_run_id AS "workflowRunId", error_type AS "errorType", error_code AS "errorCode",
  error_message AS "errorMessage", attempts, first_failed_at AS "firstFailedAt",
  last_failed_at AS "lastFailedAt", status, replay_id AS "replayId", closed_at AS "closedAt",
  closed_by AS "closedBy", close_reason AS "closeReason", created_at AS "createdAt",
  updated_at AS "updatedAt"
FROM dead_letter
WHERE ($1::dead_letter_status IS NULL OR status = $1)
  AND ($2::text IS NULL OR job_type = $2)
  AND ($3::text IS NULL OR source_id = $3)
  AND ($4::text IS NULL OR error_type = $4)
  AND ($5::timestamptz IS NULL OR created_at >= $5)
ORDER BY created_at DESC, id ASC
LIMIT $6`;

/**
 * Dead letters, newest first, at most {@link listLimit}`(limit)`; every status when `status` is
 * not given. Read-only.
 */
export async function listDeadLetterRows(
  reader: SqlReader,
  filter: {
    status?: DeadLetterStatus;
    jobType?: string;
    sourceId?: string;
    errorType?: string;
    since?: Date;
    limit?: number;
  },
): Promise<DeadLetter[]> {
  return reader.query<DeadLetter>(LIST_DEAD_LETTERS_SQL, [
    filter.status ?? null,
    filter.jobType ?? null,
    filter.sourceId ?? null,
    filter.errorType ?? null,
    filter.since ?? null,
    listLimit(filter.limit),
  ]);
}
