/**
 * `completeRun`: marks the run succeeded and writes its `fetch.run_completed` outbox event in one
 * transaction, fenced by the lease token (R1, R5).
 */
import { auditSupersededLetters } from '../../db/dead-letters/close.ts';
import { isLiveStatus } from '../../contract/states.ts';
import { lockRunOfToken, markSucceeded } from '../../db/run-end.ts';
import { inTransaction } from '../../db/transaction.ts';
import { inDbTransactionSpan } from '../../runtime/trace-spans.ts';
import { idempotencyKeyFor, jobTypeOf } from '../../contract/business-key.ts';
import type { CompleteRunInput, CompleteRunResult } from '../../contract/types.ts';
import type { ActivityDeps } from '../deps.ts';
import { crashPoint } from '../../runtime/crash-points.ts';
import { currentRunId, leaseLost } from './lease.ts';
import { eventIdFor, RUN_COMPLETED_TOPIC, runEventRow } from '../outbox.ts';

/**
 * The run's open dead letters become `superseded` in the same transaction (with audit entries).
 * Idempotent: a repeat by the same lease holder (the first call committed but its answer was
 * lost) finds the run already succeeded under its token and returns the same event id without
 * writing again.
 * @throws ApplicationFailure LeaseLost when another owner holds the run.
 */
export function createCompleteRun(deps: ActivityDeps) {
  return async function completeRun(input: CompleteRunInput): Promise<CompleteRunResult> {
    const key = idempotencyKeyFor(
      { jobType: jobTypeOf(input), sourceId: input.sourceId, businessDate: input.businessDate },
      'complete',
    );
    // Known before the transaction, so that a repeat after success returns the same id.
    const eventId = eventIdFor(key, RUN_COMPLETED_TOPIC);
    const now = deps.now();
    // Prisma's transaction, its statements sent on its connection through the driver (db/transaction.ts).
    const completed = await inDbTransactionSpan('complete run', () =>
      inTransaction(deps.prisma, async (tx, sql) => {
        // The lease token stays on the row after success so that this check still recognises a
        // repeat by the same owner.
        const run = await lockRunOfToken(sql, input);
        if (!run || !(isLiveStatus(run.status) || run.status === 'succeeded')) throw leaseLost(input);
        const result = { eventId, pages: run.pages_stored, records: run.records_stored };
        if (run.status === 'succeeded') return result;
        // The execution that completed it (a reset to a later workflow task kept the token).
        const workflowRunId = currentRunId();
        const ending = { fetchRunId: input.fetchRunId, workflowRunId };
        const event = runEventRow({
          topic: RUN_COMPLETED_TOPIC,
          stepKey: key,
          fetchRunId: input.fetchRunId,
          payload: {
            fetchRunId: input.fetchRunId,
            sourceId: input.sourceId,
            businessDate: input.businessDate,
            pages: result.pages,
            records: result.records,
          },
          now,
        });
        // The key's earlier failures need no handling any more (e.g. it was reset after a fix).
        const closed = await markSucceeded(sql, { ...ending, now, event });
        const superseded = await auditSupersededLetters(tx, ending, closed);
        if (superseded.length > 0) {
          deps.log.info(
            { fetchRunId: input.fetchRunId, deadLetterIds: superseded },
            'dead letters superseded',
          );
        }
        return { ...result, startedAt: run.started_at };
      }),
    );
    crashPoint(deps.crashPoint, 'after-complete');
    // Counted once, by the attempt that made the run succeed (a repeat has no startedAt).
    const { startedAt, ...result } = completed as CompleteRunResult & { startedAt?: Date | null };
    if (startedAt !== undefined) {
      const run = { source: input.sourceId, job_type: jobTypeOf(input) };
      deps.metrics.runsFinished.inc({ ...run, status: 'succeeded', error_type: '' });
      if (startedAt) {
        deps.metrics.runDuration.observe(
          { ...run, status: 'succeeded' },
          (now.getTime() - startedAt.getTime()) / 1000,
        );
      }
    }
    return result;
  };
}
