/**
 * The run's lease (R1, R9): a fencing token plus an expiry on the FetchRun row. Every write of a
 * run checks the token; long work renews the expiry. Times come from the database's clock.
 */
import type { ApplicationFailure } from '@temporalio/activity';
import {
  renewLease as renewLeaseRow,
  renewLeaseReadingSource,
  statusUnderToken,
} from '../../db/fetch-run.ts';
import { isLiveStatus } from '../../contract/states.ts';
import type { Fence } from '../../db/fence.ts';
import type { PrismaClient, Source } from '../../prisma/generated/client.ts';
import { RUN_ENDED } from '../../contract/error-types.ts';
import { failure } from '../errors.ts';
import { currentActivityInfo } from '../activity-info.ts';

/**
 * Extends the lease by `ttlMs` from now if `fence` still holds it, and records the calling
 * activity's workflow execution as the one that holds the run now: a reset of a workflow to a
 * later workflow task goes on with the same token in a new execution, which must be the one the
 * row (and a later dead letter) names.
 * @throws ApplicationFailure LeaseLost: `RUN_ENDED` when the run ended under this very token (an
 *   execution reset to an earlier point of its history than the run's end), else `LEASE_LOST`
 *   (another owner holds the run).
 */
export async function renewLease(
  db: Pick<PrismaClient, '$executeRaw' | '$queryRaw'>,
  fence: Fence,
  ttlMs: number,
): Promise<void> {
  if (await renewLeaseRow(db, fence, ttlMs, currentRunId())) return;
  throw await lostLease(db, fence);
}

/**
 * {@link renewLease}, and the source `sourceId` as it is now (null: deleted), read in the same
 * statement: one round trip for a step that renews the lease and re-reads its source (R2).
 * @throws ApplicationFailure LeaseLost, as {@link renewLease}.
 */
export async function renewLeaseWithSource(
  db: Pick<PrismaClient, '$queryRaw'>,
  fence: Fence,
  ttlMs: number,
  sourceId: string,
): Promise<Source | null> {
  const renewed = await renewLeaseReadingSource(db, fence, ttlMs, currentRunId(), sourceId);
  if (renewed) return renewed.source;
  throw await lostLease(db, fence);
}

/**
 * Why `fence` no longer holds its run, once a fenced write of it changed nothing: LeaseLost
 * `RUN_ENDED` when the run ended under this very token (an execution reset to an earlier point
 * of its history than the run's end, or a workflow task run again after its worker died between
 * a database step and the end it committed: the steps of one task are local activities), else
 * `LEASE_LOST` (another owner holds the run). Read-only.
 */
export async function lostLease(
  db: Pick<PrismaClient, '$queryRaw'>,
  fence: Fence,
): Promise<ApplicationFailure> {
  const status = await statusUnderToken(db, fence);
  if (status !== undefined && !isLiveStatus(status)) {
    return failure(
      'LeaseLost',
      RUN_ENDED,
      `run ${fence.fetchRunId} already ended (${status}) under this claim: this execution started from an earlier point of its history`,
    );
  }
  return leaseLost(fence);
}

export function leaseLost(fence: Fence) {
  return failure('LeaseLost', 'LEASE_LOST', `run ${fence.fetchRunId} is no longer held by this lease`);
}

/** The workflow execution (run id) of the activity being executed; undefined outside one. */
export function currentRunId(): string | undefined {
  return currentActivityInfo()?.workflowExecution?.runId;
}
