/**
 * The run fence (R1, R9), written once: a run's rows may be written only by the holder of its
 * lease — the `fetch_run` row's id, its current `lease_token`, and (for every write but the
 * repeat of `completeRun`) a live status: `running`, or `retry_wait` while one of its steps waits
 * for its next attempt. Every statement that fences on the lease builds its condition here, so
 * the check cannot drift between statements.
 */
import { LIVE_RUN_STATUSES } from '../contract/states.ts';
import { Prisma } from '../prisma/generated/client.ts';

/** Who claims to hold a run: the run's id and the lease (fencing) token its claim handed out. */
export interface Fence {
  fetchRunId: string;
  leaseToken: string;
}

/** A fence that also names the page the run must be at (`pages_stored`): staging only. */
export type PageFence = Fence & { pageNo: number };

/** The statuses as SQL literals (code, never input). */
const LIVE_LIST = Prisma.raw(LIVE_RUN_STATUSES.map((s) => `'${s}'`).join(', '));

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** `<alias>.<name>`, or `<name>` without an alias; the alias is code, never input, but checked. */
function column(name: string, alias: string | undefined): Prisma.Sql {
  if (alias === undefined) return Prisma.raw(name);
  if (!IDENTIFIER.test(alias)) throw new Error(`not a table alias: ${alias}`);
  return Prisma.raw(`${alias}.${name}`);
}

/**
 * `<alias>.id = $1::uuid AND <alias>.lease_token = $2::uuid`: the row is the run and carries
 * the fence's token, whatever its status. Only `completeRun` uses it bare (a repeat by the same
 * owner finds the run already succeeded under its token); every other write uses {@link heldBy}.
 */
export function tokenOf(fence: Fence, alias?: string): Prisma.Sql {
  return Prisma.sql`${column('id', alias)} = ${fence.fetchRunId}::uuid AND ${column('lease_token', alias)} = ${fence.leaseToken}::uuid`;
}

/** `<alias>.status IN ('running', 'retry_wait')`: the run is live ({@link LIVE_RUN_STATUSES}). */
export function isLive(alias?: string): Prisma.Sql {
  return Prisma.sql`${column('status', alias)} IN (${LIVE_LIST})`;
}

/**
 * `<alias>.id = $1::uuid AND <alias>.lease_token = $2::uuid AND <alias>.status IN ('running',
 * 'retry_wait')`: `fence` holds the run now. A statement conditioned on it changes nothing for a
 * stale owner (a zombie attempt, an execution a reset replaced), which the caller reports as
 * LeaseLost.
 */
export function heldBy(fence: Fence, alias?: string): Prisma.Sql {
  return Prisma.sql`${tokenOf(fence, alias)} AND ${isLive(alias)}`;
}

/**
 * {@link heldBy}, and the run is at page `fence.pageNo` (`pages_stored`): a page already stored
 * is never staged again by a late attempt.
 */
export function heldAtPage(fence: PageFence, alias?: string): Prisma.Sql {
  return Prisma.sql`${heldBy(fence, alias)} AND ${column('pages_stored', alias)} = ${fence.pageNo}`;
}

/**
 * `lease_until = now() + <ttl>, workflow_run_id = COALESCE($n, workflow_run_id)`: the SET clause
 * of a lease renewal, for an UPDATE of fetch_run under {@link heldBy}. `workflowRunId`, when
 * known, is recorded as the execution that holds the run now (a reset may have replaced it).
 */
export function renewedLease(ttlMs: number, workflowRunId: string | undefined): Prisma.Sql {
  return Prisma.sql`lease_until = now() + make_interval(secs => ${ttlMs / 1000}),
                    workflow_run_id = COALESCE(${workflowRunId ?? null}, workflow_run_id)`;
}
