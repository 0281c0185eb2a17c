/**
 * `finishRun`: records how a run ended when it did not succeed — cancelled, or failed for good
 * with its error type and a dead letter (R1, R11). Fenced by the lease token like every write of a
 * run. The statement is shared with the stuck-run sweep (worker/sweeps/stuck-runs.ts), which settles
 * rows whose workflow closed without recording its end: one statement, one set of invariants.
 */
import { endRun } from '../../db/run-end.ts';
import { MAX_KEPT_MESSAGE } from '../../db/limits.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import type { Logger } from '../../runtime/logger.ts';
import { errorTypeLabel, type Metrics } from '../../runtime/metrics/metrics.ts';
import { redactUrlsIn } from '../../runtime/redact.ts';
import type { FinishRunInput, FinishRunResult } from '../../contract/types.ts';
import type { ActivityDeps } from '../deps.ts';

/** What {@link finishRunRow} did: whether it ended the run, and the row's facts for metrics. */
export interface FinishedRow {
  finished: boolean;
  deadLetterId: string | null;
  /** The error type written (`Internal` when a dead letter came without one). */
  errorType: string | null;
  sourceId: string | null;
  jobType: string | null;
  startedAt: Date | null;
  /** The run had already succeeded under this lease token: its totals (db/run-end.ts). */
  succeeded: { pages: number; records: number } | null;
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
  const row = await endRun(db, input, {
    status: input.status,
    errorType,
    errorCode: input.errorCode ?? null,
    message,
  });
  return {
    finished: row.ended,
    deadLetterId: row.deadLetterId,
    errorType,
    sourceId: row.sourceId,
    jobType: row.jobType,
    startedAt: row.startedAt,
    succeeded: row.succeeded,
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
    deps.metrics.runsFinished.inc({ ...run, status: input.status, error_type: errorTypeLabel(errorType) });
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
 * run another owner holds by now, changes nothing and returns `{ finished: false }`; a run that
 * had already succeeded under this token also says so, with its totals (`succeeded`).
 */
export function createFinishRun(deps: ActivityDeps) {
  return async function finishRun(input: FinishRunInput): Promise<FinishRunResult> {
    const row = await finishRunRow(deps.prisma, input);
    observeRunFinished(deps, input, row);
    return {
      finished: row.finished,
      deadLetterId: row.deadLetterId,
      ...(row.succeeded ? { succeeded: row.succeeded } : {}),
    };
  };
}
