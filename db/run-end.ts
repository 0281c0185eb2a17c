/**
 * How a run's row ends (R1, R11): succeeded (`completeRun`), or cancelled / dead-lettered with a
 * `dead_letter` row (`finishRun`, and the stuck-run sweep through it). Both fenced by the lease.
 */
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { FinishRunInput } from '../contract/types.ts';
import { type SupersededLetter, supersedeOpenLettersSql } from './dead-letters/close.ts';
import { type Fence, heldBy, tokenOf } from './fence.ts';
import { insertOutboxEventsSql, type NewOutboxEvent } from './outbox/outbox.ts';

/** What {@link lockRunOfToken} reads of the run. */
export interface RunTotals {
  started_at: Date | null;
  pages_stored: number;
  records_stored: number;
  status: string;
}

/**
 * Locks the run FOR UPDATE inside `tx` when it carries `fence`'s token, whatever its status, and
 * returns its totals; undefined when it does not. The lease token stays on the row after success
 * so that this check still recognises a repeat by the same owner.
 */
export async function lockRunOfToken(
  tx: Pick<PrismaClient, '$queryRaw'>,
  fence: Fence,
): Promise<RunTotals | undefined> {
  const rows = await tx.$queryRaw<RunTotals[]>`
    SELECT status::text AS status, pages_stored, records_stored, started_at FROM fetch_run
     WHERE ${tokenOf(fence)}
       FOR UPDATE`;
  return rows[0];
}

/**
 * One statement, under {@link lockRunOfToken}'s lock: marks the run succeeded at `now` (its lease
 * ended, its error and next attempt time cleared; `workflowRunId`, when known, the execution that
 * completed it: a reset to a later workflow task kept the token), deletes its loop memory (one row
 * per partner page: a succeeded run fetches nothing more), inserts `event` (the run's completion
 * event) and closes the run's open dead letters. Returns the letters closed, for their audit
 * entries (db/dead-letters/close.ts).
 */
export async function markSucceeded(
  tx: Pick<PrismaClient, '$queryRaw'>,
  run: { fetchRunId: string; now: Date; workflowRunId: string | undefined; event: NewOutboxEvent },
): Promise<SupersededLetter[]> {
  // Data-modifying CTEs always run to completion, read or not; each writes a table of its own.
  return tx.$queryRaw<SupersededLetter[]>`
    WITH cursors AS (DELETE FROM run_cursor WHERE fetch_run_id = ${run.fetchRunId}::uuid),
         event AS (${insertOutboxEventsSql([run.event])}),
         run AS (
           UPDATE fetch_run
              SET status = 'succeeded', finished_at = ${run.now}, lease_until = NULL, next_run_at = NULL,
                  error_class = NULL, error_message = NULL, updated_at = now(),
                  workflow_run_id = COALESCE(${run.workflowRunId ?? null}, workflow_run_id)
            WHERE id = ${run.fetchRunId}::uuid),
         letters AS (${supersedeOpenLettersSql(run)})
    SELECT id, workflow_run_id FROM letters`;
}

/** What {@link endRun} wrote. */
export interface EndedRow {
  /** Whether the run was ended by this statement. */
  ended: boolean;
  deadLetterId: string | null;
  sourceId: string | null;
  jobType: string | null;
  startedAt: Date | null;
  /**
   * When the statement changed nothing because the run had already succeeded under `fence`'s
   * token (its `completeRun` committed, and the workflow did not learn it: the workflow task that
   * ran it failed), its totals; else null.
   */
  succeeded: { pages: number; records: number } | null;
}

/**
 * One statement: sets the final status (`cancelled` or `dead_lettered`) with `errorType` and
 * `message` (already redacted and bounded) and ends the lease — only while `fence` holds the run;
 * a `dead_lettered` run gets one `dead_letter` row (business key, workflow ids, error type and
 * code, message, executions so far, first and last failure time — never a payload). Idempotent:
 * a repeat, or a run another owner holds by now, changes nothing.
 */
export async function endRun(
  db: Pick<PrismaClient, '$queryRaw'>,
  fence: Fence,
  end: {
    status: FinishRunInput['status'];
    errorType: string | null;
    errorCode: string | null;
    message: string | null;
  },
): Promise<EndedRow> {
  const { errorType, message } = end;
  const [row] = await db.$queryRaw<
    {
      updated: bigint;
      dead_letter_id: string | null;
      source_id: string | null;
      job_type: string | null;
      started_at: Date | null;
      succeeded_pages: number | null;
      succeeded_records: number | null;
    }[]
  >`
    WITH run AS (
      UPDATE fetch_run
         SET status = ${end.status}::run_status, error_class = ${errorType}, error_message = ${message},
             finished_at = now(), lease_until = NULL, next_run_at = NULL, updated_at = now()
       WHERE ${heldBy(fence)}
      RETURNING id, attempt, job_type, source_id, business_date, workflow_id, workflow_run_id, started_at
    ), letter AS (
      INSERT INTO dead_letter (id, fetch_run_id, job_type, source_id, business_date, workflow_id, workflow_run_id,
                               error_type, error_code, error_message, attempts, first_failed_at, last_failed_at)
      SELECT gen_random_uuid(), run.id, run.job_type, run.source_id, run.business_date, run.workflow_id,
             run.workflow_run_id, ${errorType}, ${end.errorCode}, COALESCE(${message}, ''), run.attempt,
             COALESCE((SELECT min(d.first_failed_at) FROM dead_letter d WHERE d.fetch_run_id = run.id), now()),
             now()
        FROM run
       WHERE ${end.status} = 'dead_lettered'
      RETURNING id::text
    )
    SELECT (SELECT count(*) FROM run) AS updated, (SELECT id FROM letter) AS dead_letter_id,
           (SELECT source_id FROM run) AS source_id, (SELECT job_type FROM run) AS job_type,
           (SELECT started_at FROM run) AS started_at,
           s.pages_stored AS succeeded_pages, s.records_stored AS succeeded_records
      FROM (SELECT 1) AS one
      LEFT JOIN fetch_run s ON ${tokenOf(fence, 's')} AND s.status = 'succeeded'`;
  return {
    ended: Number(row?.updated ?? 0) === 1,
    deadLetterId: row?.dead_letter_id ?? null,
    sourceId: row?.source_id ?? null,
    jobType: row?.job_type ?? null,
    startedAt: row?.started_at ?? null,
    succeeded:
      row?.succeeded_pages == null || row.succeeded_records == null
        ? null
        : { pages: row.succeeded_pages, records: row.succeeded_records },
  };
}
