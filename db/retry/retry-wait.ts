/**
 * R1's retry-wait state on a run's row: while one of its steps waits for the next attempt Temporal
 * will make (the attempt failed retryably), the row says `retry_wait`, when that attempt is due
 * (`next_run_at`) and the error class of the failure; the next attempt's start sets it back to
 * `running`. Both statements are fenced by the lease, so a stale owner changes nothing, and both
 * use the database's clock, like the lease itself.
 */
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { type Fence, heldBy, tokenOf } from '../fence.ts';

type Db = Pick<PrismaClient, '$executeRaw'>;

/** What a step's failed attempt leaves on the row while it waits. */
export interface RetryWait {
  /** How long Temporal waits before the next attempt (the delay handed to it). */
  delayMs: number;
  /** The error type of the failure (contract/error-types.ts). */
  errorClass: string;
  /** Already redacted and bounded by the caller. */
  errorMessage: string;
  /**
   * The run's lease TTL: the lease is kept at least this long past the next attempt's start, so
   * that the known wait never makes the owner look gone (no takeover, no stuck-run check).
   */
  leaseTtlMs: number;
}

/**
 * Marks the live run `fence` holds as waiting for its next attempt: `retry_wait`, `next_run_at`
 * = now + `delayMs`, the error class and message of the failure, the lease extended over the wait.
 * Returns whether the row changed (false: another owner holds the run, or it ended). Idempotent
 * for one failure; no other side effect.
 */
export async function enterRetryWait(db: Db, fence: Fence, wait: RetryWait): Promise<boolean> {
  const changed = await db.$executeRaw`
    UPDATE fetch_run
       SET status = 'retry_wait',
           next_run_at = now() + make_interval(secs => ${wait.delayMs / 1000}),
           error_class = ${wait.errorClass}, error_message = ${wait.errorMessage},
           lease_until = GREATEST(lease_until, now() + make_interval(secs => ${(wait.delayMs + wait.leaseTtlMs) / 1000})),
           updated_at = now()
     WHERE ${heldBy(fence)}`;
  return changed === 1;
}

/**
 * Marks the run `fence` holds as `running` again (`next_run_at` cleared) when it is in
 * `retry_wait`: the next attempt has started. The error class and message of the last failure
 * stay until the run ends (success clears them). Returns whether the row changed. Idempotent.
 */
export async function leaveRetryWait(db: Db, fence: Fence): Promise<boolean> {
  const changed = await db.$executeRaw`
    UPDATE fetch_run SET status = 'running', next_run_at = NULL, updated_at = now()
     WHERE ${tokenOf(fence)} AND status = 'retry_wait'`;
  return changed === 1;
}

/** The runs waiting for a step's next attempt now: how many, by error class, the next one due. */
export interface RetryWaitSummary {
  runs: number;
  /** Count per error class of the failure they wait after. */
  byErrorClass: Record<string, number>;
  /** The earliest `next_run_at` among them; null when none waits. */
  nextDueAt: Date | null;
}

/** {@link RetryWaitSummary} of every run in `retry_wait`, or of `jobType`'s only. Read-only. */
export async function readRetryWaits(
  db: Pick<PrismaClient, '$queryRaw'>,
  jobType: string | null = null,
): Promise<RetryWaitSummary> {
  const rows = await db.$queryRaw<{ error_class: string; runs: bigint; next_due: Date | null }[]>`
    SELECT COALESCE(error_class, 'Internal') AS error_class, count(*) AS runs, min(next_run_at) AS next_due
      FROM fetch_run
     WHERE status = 'retry_wait' AND (${jobType}::text IS NULL OR job_type = ${jobType})
     GROUP BY 1`;
  const byErrorClass = Object.fromEntries(rows.map((r) => [r.error_class, Number(r.runs)]));
  const due = rows.flatMap((r) => (r.next_due ? [r.next_due.getTime()] : []));
  const nextDueAt = due.length === 0 ? null : new Date(Math.min(...due));
  return { runs: Object.values(byErrorClass).reduce((a, b) => a + b, 0), byErrorClass, nextDueAt };
}
