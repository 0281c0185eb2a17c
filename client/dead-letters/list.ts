/** `dlq list`: dead letters by source, job type, error type, time and status. */
import type { DeadLetter, DeadLetterStatus } from '../../prisma/generated/client.ts';
import { listLimit, type ReadContext, readerOf } from '../sql-reader.ts';
import { type DeadLetterView, view } from './view.ts';

export interface ListDeadLettersFilter {
  /** Only letters of this job type, e.g. `exchange-rates`. */
  jobType?: string;
  sourceId?: string;
  /** DESIGN error type, e.g. `InvalidInput`. */
  errorType?: string;
  /** Only letters written at or after this time. */
  since?: Date;
  /** Default `open`; `all` for every status. */
  status?: DeadLetterStatus | 'all';
  /** Newest first; default 50, at most 1000. */
  limit?: number;
}

// Every column under its model field name, in the model's order (what `findMany` returns); a
// filter left out is a NULL parameter, so one statement serves every combination of filters.
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
 * Dead letters, newest first. Read-only. Reads through the app's PrismaClient or any reader (the
 * CLI's, client/sql-reader.ts); the letters are the same either way.
 */
export async function listDeadLetters(
  ctx: ReadContext,
  filter: ListDeadLettersFilter = {},
): Promise<DeadLetterView[]> {
  const status = filter.status ?? 'open';
  const rows = await readerOf(ctx).query<DeadLetter>(LIST_DEAD_LETTERS_SQL, [
    status === 'all' ? null : status,
    filter.jobType ?? null,
    filter.sourceId ?? null,
    filter.errorType ?? null,
    filter.since ?? null,
    listLimit(filter.limit),
  ]);
  return rows.map(view);
}
