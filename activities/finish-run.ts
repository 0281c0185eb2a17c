/**
 * `finishRun`: records how a run ended when it did not succeed — cancelled, or failed for good
 * with its error type (R1, R11). Fenced by the lease token like every write of a run.
 */
import type { FinishRunInput } from '../workflows/types.ts';
import type { ActivityDeps } from './deps.ts';

/** Longest error message kept on the row: enough to read, never a dumped body. */
const MAX_MESSAGE = 500;

/**
 * Sets the final status (`cancelled`, or `dead_lettered` for a permanent failure; issue #7 adds
 * the dead-letter record) with the error type and a redacted message, and ends the lease.
 * Idempotent: a repeat, or a run another owner holds by now, changes nothing and returns false.
 */
export function createFinishRun(deps: ActivityDeps) {
  return async function finishRun(input: FinishRunInput): Promise<boolean> {
    const message = input.errorMessage?.slice(0, MAX_MESSAGE) ?? null;
    const updated = await deps.prisma.$executeRaw`
      UPDATE fetch_run
         SET status = ${input.status}::run_status, error_class = ${input.errorType ?? null},
             error_message = ${message}, finished_at = now(), lease_until = NULL, updated_at = now()
       WHERE id = ${input.fetchRunId}::uuid AND lease_token = ${input.leaseToken}::uuid AND status = 'running'`;
    if (updated === 1) deps.log.info({ fetchRunId: input.fetchRunId, status: input.status }, 'run finished');
    return updated === 1;
  };
}
