/**
 * The run's lease (R1, R9): a fencing token plus an expiry on the FetchRun row. Every write of a
 * run checks the token; long work renews the expiry. Times come from the database's clock.
 */
import type { PrismaClient } from '../prisma/generated/client.ts';
import { failure } from './errors.ts';

export interface Fence {
  fetchRunId: string;
  leaseToken: string;
}

/**
 * Extends the lease by `ttlMs` from now if `fence` still holds it.
 * @throws ApplicationFailure LeaseLost when another owner holds the run, or it is no longer running.
 */
export async function renewLease(
  db: Pick<PrismaClient, '$executeRaw'>,
  fence: Fence,
  ttlMs: number,
): Promise<void> {
  const renewed = await db.$executeRaw`
    UPDATE fetch_run SET lease_until = now() + make_interval(secs => ${ttlMs / 1000})
     WHERE id = ${fence.fetchRunId}::uuid AND lease_token = ${fence.leaseToken}::uuid AND status = 'running'`;
  if (renewed !== 1) throw leaseLost(fence);
}

export function leaseLost(fence: Fence) {
  return failure('LeaseLost', 'LEASE_LOST', `run ${fence.fetchRunId} is no longer held by this lease`);
}
