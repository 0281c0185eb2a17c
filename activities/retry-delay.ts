/**
 * When to retry (R7): full jitter on an exponential ceiling, or the partner's Retry-After clamped to
 * the preset's maximum interval, never past the overall deadline. Pure: the caller passes the clock
 * and the random source. Temporal's RetryPolicy has no jitter, so activities compute the delay here
 * and hand it to Temporal as `nextRetryDelay`.
 */

export interface Backoff {
  initialMs: number;
  coefficient: number;
  maximumMs: number;
}

/**
 * Full jitter ("Exponential Backoff And Jitter", AWS): uniformly random in
 * [0, min(maximum, initial × coefficient^(attempt−1))]. `attempt` is the attempt that just failed (1-based).
 */
export function fullJitterMs(attempt: number, b: Backoff, random: () => number = Math.random): number {
  const ceiling = Math.min(b.maximumMs, b.initialMs * b.coefficient ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

/**
 * Parses a `Retry-After` header: delta-seconds (`120`) or an HTTP-date
 * (`Wed, 21 Oct 2026 07:28:00 GMT`). Returns milliseconds from `now` (≥ 0), or undefined when absent
 * or malformed.
 */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}

export type RetryDecision = { retryInMs: number } | { deadlineExceeded: true; neededMs: number };

/**
 * The shortest delay handed to Temporal. Its server reads a next-retry delay of zero as none
 * given: it waits the policy's maximum interval instead, or retries no more when that would pass
 * the step's deadline. So "at once" (a `Retry-After: 0`, a date already past, a jitter that drew 0)
 * is sent as 1 ms.
 */
export const MIN_RETRY_DELAY_MS = 1;

/**
 * The delay before the next attempt: `retryAfterMs` (clamped to the maximum interval) when the
 * partner asked for one, else full jitter. When waiting would leave less than `minAttemptMs`
 * (default 1 s) before `deadlineMs` (the activity's schedule-to-close deadline), retrying is
 * pointless: the caller fails with DeadlineExceeded instead of sleeping into the deadline.
 */
export function nextRetry(opts: {
  attempt: number;
  backoff: Backoff;
  retryAfterMs?: number;
  nowMs: number;
  deadlineMs?: number;
  minAttemptMs?: number;
  random?: () => number;
}): RetryDecision {
  const asked =
    opts.retryAfterMs !== undefined
      ? Math.min(opts.retryAfterMs, opts.backoff.maximumMs)
      : fullJitterMs(opts.attempt, opts.backoff, opts.random);
  const delay = Math.max(MIN_RETRY_DELAY_MS, asked);
  if (opts.deadlineMs !== undefined && opts.nowMs + delay + (opts.minAttemptMs ?? 1000) >= opts.deadlineMs) {
    return { deadlineExceeded: true, neededMs: delay };
  }
  return { retryInMs: delay };
}
