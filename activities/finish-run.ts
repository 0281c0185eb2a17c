/**
 * `finishRun`: records how a run ended when it did not succeed — cancelled, or failed for good
 * with its error type and a dead letter (R1, R11). Fenced by the lease token like every write of a
 * run.
 */
import { redactUrlsIn } from '../worker/redact.ts';
import type { FinishRunInput } from '../workflows/types.ts';
import type { ActivityDeps } from './deps.ts';

/** Longest error message kept on the row: enough to read, never a dumped body. */
const MAX_MESSAGE = 500;

/**
 * Sets the final status (`cancelled`, or `dead_lettered` for a permanent failure) with the error
 * type and a redacted message, and ends the lease. A `dead_lettered` run gets one `dead_letter`
 * row in the same statement (issue #7): business key, workflow ids, error type, safe code,
 * redacted message, executions so far, first and last failure time — never a payload.
 * Idempotent: a repeat, or a run another owner holds by now, changes nothing and returns
 * `{ finished: false }`.
 */
export function createFinishRun(deps: ActivityDeps) {
  return async function finishRun(
    input: FinishRunInput,
  ): Promise<{ finished: boolean; deadLetterId: string | null }> {
    const message =
      input.errorMessage === undefined ? null : redactUrlsIn(input.errorMessage).slice(0, MAX_MESSAGE);
    const errorType = input.errorType ?? (input.status === 'dead_lettered' ? 'Internal' : null);
    const [row] = await deps.prisma.$queryRaw<
      { updated: bigint; dead_letter_id: string | null; source_id: string | null; started_at: Date | null }[]
    >`
      WITH run AS (
        UPDATE fetch_run
           SET status = ${input.status}::run_status, error_class = ${errorType}, error_message = ${message},
               finished_at = now(), lease_until = NULL, updated_at = now()
         WHERE id = ${input.fetchRunId}::uuid AND lease_token = ${input.leaseToken}::uuid AND status = 'running'
        RETURNING id, attempt, job_type, source_id, business_date, workflow_id, workflow_run_id, started_at
      ), letter AS (
        INSERT INTO dead_letter (id, fetch_run_id, job_type, source_id, business_date, workflow_id, workflow_run_id,
                                 error_type, error_code, error_message, attempts, first_failed_at, last_failed_at)
        SELECT gen_random_uuid(), run.id, run.job_type, run.source_id, run.business_date, run.workflow_id,
               run.workflow_run_id, ${errorType}, ${input.errorCode ?? null}, COALESCE(${message}, ''), run.attempt,
               COALESCE((SELECT min(d.first_failed_at) FROM dead_letter d WHERE d.fetch_run_id = run.id), now()),
               now()
          FROM run
         WHERE ${input.status} = 'dead_lettered'
        RETURNING id::text
      )
      SELECT (SELECT count(*) FROM run) AS updated, (SELECT id FROM letter) AS dead_letter_id,
             (SELECT source_id FROM run) AS source_id, (SELECT started_at FROM run) AS started_at`;
    const finished = Number(row?.updated ?? 0) === 1;
    const deadLetterId = row?.dead_letter_id ?? null;
    if (finished && row?.source_id) {
      const source = row.source_id;
      deps.metrics.runsFinished.inc({ source, status: input.status, error_type: errorType ?? '' });
      if (row.started_at) {
        const seconds = (Date.now() - row.started_at.getTime()) / 1000;
        deps.metrics.runDuration.observe({ source, status: input.status }, seconds);
      }
    }
    if (finished) {
      deps.log.info(
        { fetchRunId: input.fetchRunId, status: input.status, errorType, deadLetterId },
        deadLetterId ? 'run dead-lettered' : 'run finished',
      );
    }
    return { finished, deadLetterId };
  };
}
