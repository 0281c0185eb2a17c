/**
 * `finishRun`: records how a run ended when it did not succeed — cancelled, or failed for good
 * with its error type and a dead letter (R1, R11). Fenced by the lease token like every write of a
 * run. The statement is shared with the stuck-run sweep (client/stuck-runs.ts), which settles
 * rows whose workflow closed without recording its end: one statement, one set of invariants.
 */
import { MAX_KEPT_MESSAGE } from './errors.ts';
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { Logger } from '../worker/logger.ts';
import type { Metrics } from '../worker/metrics.ts';
import { redactUrlsIn } from '../worker/redact.ts';
import type { FinishRunInput } from '../workflows/types.ts';
import type { ActivityDeps } from './deps.ts';

/** What {@link finishRunRow} did: whether it ended the run, and the row's facts for metrics. */
export interface FinishedRow {
  finished: boolean;
  deadLetterId: string | null;
  /** The error type written (`Internal` when a dead letter came without one). */
  errorType: string | null;
  sourceId: string | null;
  jobType: string | null;
  startedAt: Date | null;
}

/**
 * Sets the final status (`cancelled`, or `dead_lettered` for a permanent failure) with the error
 * type and a redacted message, and ends the lease — only while the row is `running` under
 * `leaseToken`. A `dead_lettered` run gets one `dead_letter` row in the same statement: business
 * key, workflow ids, error type, safe code, redacted message, executions so far, first and last
 * failure time — never a payload. Runs inside the caller's transaction when given one.
 * Idempotent: a repeat, or a run another owner holds by now, changes nothing (`finished: false`).
 * No metrics, no logs: see {@link observeRunFinished}.
 * @throws database errors as Prisma throws them.
 */
export async function finishRunRow(
  db: Pick<PrismaClient, '$queryRaw'>,
  input: FinishRunInput,
): Promise<FinishedRow> {
  const message =
    input.errorMessage === undefined ? null : redactUrlsIn(input.errorMessage).slice(0, MAX_KEPT_MESSAGE);
  const errorType = input.errorType ?? (input.status === 'dead_lettered' ? 'Internal' : null);
  const [row] = await db.$queryRaw<
    {
      updated: bigint;
      dead_letter_id: string | null;
      source_id: string | null;
      job_type: string | null;
      started_at: Date | null;
    }[]
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
           (SELECT source_id FROM run) AS source_id, (SELECT job_type FROM run) AS job_type,
           (SELECT started_at FROM run) AS started_at`;
  return {
    finished: Number(row?.updated ?? 0) === 1,
    deadLetterId: row?.dead_letter_id ?? null,
    errorType,
    sourceId: row?.source_id ?? null,
    jobType: row?.job_type ?? null,
    startedAt: row?.started_at ?? null,
  };
}

/**
 * Counts and logs a run {@link finishRunRow} ended (call it once its transaction committed):
 * `durable_fetch_runs_finished_total`, the duration histogram, one info line. No-op when the
 * statement changed nothing.
 */
export function observeRunFinished(
  deps: { metrics: Metrics; log: Logger },
  input: FinishRunInput,
  row: FinishedRow,
): void {
  if (!row.finished) return;
  const { errorType, deadLetterId } = row;
  if (row.sourceId && row.jobType) {
    const run = { source: row.sourceId, job_type: row.jobType };
    deps.metrics.runsFinished.inc({ ...run, status: input.status, error_type: errorType ?? '' });
    if (row.startedAt) {
      const seconds = (Date.now() - row.startedAt.getTime()) / 1000;
      deps.metrics.runDuration.observe({ ...run, status: input.status }, seconds);
    }
  }
  deps.log.info(
    { fetchRunId: input.fetchRunId, status: input.status, errorType, deadLetterId },
    deadLetterId ? 'run dead-lettered' : 'run finished',
  );
}

/**
 * The activity: {@link finishRunRow} then {@link observeRunFinished}. Idempotent: a repeat, or a
 * run another owner holds by now, changes nothing and returns `{ finished: false }`.
 */
export function createFinishRun(deps: ActivityDeps) {
  return async function finishRun(
    input: FinishRunInput,
  ): Promise<{ finished: boolean; deadLetterId: string | null }> {
    const row = await finishRunRow(deps.prisma, input);
    observeRunFinished(deps, input, row);
    return { finished: row.finished, deadLetterId: row.deadLetterId };
  };
}
