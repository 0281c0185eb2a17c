/**
 * The run's lease (R1, R9): a fencing token plus an expiry on the FetchRun row. Every write of a
 * run checks the token; long work renews the expiry. Times come from the database's clock.
 */
import { Context } from '@temporalio/activity';
import { renewLease as renewLeaseRow } from '../db/fetch-run.ts';
import type { Fence } from '../db/fence.ts';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { failure } from './errors.ts';

/**
 * Extends the lease by `ttlMs` from now if `fence` still holds it, and records the calling
 * activity's workflow execution as the one that holds the run now: a reset of a workflow to a
 * later workflow task goes on with the same token in a new execution, which must be the one the
 * row (and a later dead letter) names.
 * @throws ApplicationFailure LeaseLost when another owner holds the run, or it is no longer running.
 */
export async function renewLease(
  db: Pick<PrismaClient, '$executeRaw'>,
  fence: Fence,
  ttlMs: number,
): Promise<void> {
  if (!(await renewLeaseRow(db, fence, ttlMs, currentRunId()))) throw leaseLost(fence);
}

export function leaseLost(fence: Fence) {
  return failure('LeaseLost', 'LEASE_LOST', `run ${fence.fetchRunId} is no longer held by this lease`);
}

/** The workflow execution (run id) of the activity being executed; undefined outside one. */
export function currentRunId(): string | undefined {
  try {
    return Context.current().info.workflowExecution?.runId;
  } catch {
    return undefined; // called outside an activity (a direct call in a test)
  }
}
