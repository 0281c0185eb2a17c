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

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = `(?<month>${MONTHS.join('|')})`;
const TIME = '(?<h>\\d{2}):(?<m>\\d{2}):(?<s>\\d{2})';
/** The three forms of an HTTP-date (RFC 9110 §5.6.7); recipients must accept all three. */
const HTTP_DATES = [
  // `Sun, 06 Nov 1994 08:49:37 GMT`: IMF-fixdate, the form senders must use.
  new RegExp(`^${DAY}, (?<day>\\d{2}) ${MONTH} (?<year>\\d{4}) ${TIME} GMT$`),
  // `Sunday, 06-Nov-94 08:49:37 GMT`: RFC 850, obsolete.
  new RegExp(`^${LONG_DAY}, (?<day>\\d{2})-${MONTH}-(?<yy>\\d{2}) ${TIME} GMT$`),
  // `Sun Nov  6 08:49:37 1994`: C's asctime, obsolete, in UTC although it does not say so.
  new RegExp(`^${DAY} ${MONTH} (?<day> \\d|\\d{2}) ${TIME} (?<year>\\d{4})$`),
];

/**
 * The instant of an HTTP-date in any of its three forms, or undefined (also for a date that does
 * not exist: 31 Feb, 25:00). Parsed by its grammar: `Date.parse` accepts nearly anything ("soon 5"
 * is a date in 2001) and reads a zone-less asctime date in the process's local time zone.
 */
export function parseHttpDate(text: string, now: Date): number | undefined {
  for (const form of HTTP_DATES) {
    const g = form.exec(text)?.groups;
    if (!g) continue;
    let year = Number(g.year);
    if (g.yy !== undefined) {
      // A two-digit year more than 50 years ahead is the most recent past year ending so (RFC 9110).
      year = Math.floor(now.getUTCFullYear() / 100) * 100 + Number(g.yy);
      if (year > now.getUTCFullYear() + 50) year -= 100;
    }
    const month = MONTHS.indexOf(g.month ?? '');
    const [day, h, m, s] = [g.day, g.h, g.m, g.s].map(Number) as [number, number, number, number];
    const daysInMonth = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
    // A second of 60 is a leap second: Date.UTC reads it as the next minute's first.
    if (day < 1 || day > daysInMonth || h > 23 || m > 59 || s > 60) return undefined;
    return Date.UTC(year, month, day, h, m, s);
  }
  return undefined;
}

/**
 * Parses a `Retry-After` header: delta-seconds (`120`), fractional seconds as some partners send
 * them (`2.0`, `0.5`, rounded up to the millisecond), or an HTTP-date in any of its forms
 * (`Wed, 21 Oct 2026 07:28:00 GMT`, RFC 850, asctime). Surrounding whitespace is ignored. Returns
 * milliseconds from `now` (≥ 0; a past date means now), or undefined when absent, negative or
 * malformed. Not clamped here: the retry preset clamps it ({@link nextRetry}).
 */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^(?:\d+(?:\.\d*)?|\.\d+)$/.test(text)) {
    const ms = Math.ceil(Number(text) * 1000);
    return Number.isFinite(ms) ? ms : undefined;
  }
  const at = parseHttpDate(text, now);
  return at === undefined ? undefined : Math.max(0, at - now.getTime());
}

/**
 * How a partner writes a rate limit's reset: `seconds` (or `milliseconds`) to wait, or the `epoch`
 * second it resets at. `guess` reads the number: from 10^12 an epoch millisecond, from 10^9 an
 * epoch second (no wait is 30 years long), else seconds to wait. Unnamed reset headers need the
 * guess: `X-RateLimit-Reset` is an epoch second at GitHub and Twitter but seconds at others.
 */
export type ResetUnit = 'seconds' | 'milliseconds' | 'epoch' | 'guess';

/**
 * The wait, in milliseconds from `now` (≥ 0: a reset in the past means now), that a rate-limit
 * reset value asks for; undefined when absent or not a non-negative number. Pure.
 */
export function parseRateLimitReset(
  value: string | undefined,
  unit: ResetUnit,
  now: Date,
): number | undefined {
  const text = value?.trim();
  if (text === undefined || !/^(?:\d{1,16}(?:\.\d*)?|\.\d+)$/.test(text)) return undefined;
  const n = Number(text);
  const as = unit !== 'guess' ? unit : n >= 1e12 ? 'epoch-ms' : n >= 1e9 ? 'epoch' : 'seconds';
  switch (as) {
    case 'seconds':
      return Math.ceil(n * 1000);
    case 'milliseconds':
      return Math.ceil(n);
    case 'epoch':
      return Math.max(0, Math.ceil(n * 1000 - now.getTime()));
    case 'epoch-ms':
      return Math.max(0, Math.ceil(n - now.getTime()));
  }
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
