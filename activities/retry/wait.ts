/**
 * R1's `retry_wait` made visible where the knowledge is: the shared failure path of every activity
 * (activities/index.ts) knows when an attempt failed retryably and how long Temporal will wait
 * (the `nextRetryDelay` it hands over), and the next attempt knows it has started. For a step of a
 * run — an activity whose input carries the run's `fetchRunId` and `leaseToken` — the run's row
 * then says `retry_wait` with `next_run_at` and the error class, and `running` again once the next
 * attempt starts (db/retry/retry-wait.ts, fenced by the lease).
 *
 * Best effort by design: the row is what operators see, not what decides the run. A failed write
 * is logged and the step goes on; a failure that is our own database being unavailable writes
 * nothing at all (the write would meet the same outage, and the step's own retry covers it).
 */
import type { ApplicationFailure, Info } from '@temporalio/activity';
import { msOptionalToNumber } from '@temporalio/common/lib/time.js';
import type { Fence } from '../../db/fence.ts';
import { MAX_KEPT_MESSAGE } from '../../db/limits.ts';
import { enterRetryWait, leaveRetryWait } from '../../db/retry/retry-wait.ts';
import { redactUrlsIn } from '../../runtime/redact.ts';
import { codeOf, databaseOutageCode } from '../database-errors.ts';
import type { ActivityDeps } from '../deps.ts';
import { currentActivityInfo } from '../activity-info.ts';

/** The run fence an activity's input carries, when the activity is a step of a run. */
export function fenceOf(input: unknown): Fence | undefined {
  if (typeof input !== 'object' || input === null) return undefined;
  const { fetchRunId, leaseToken } = input as { fetchRunId?: unknown; leaseToken?: unknown };
  return typeof fetchRunId === 'string' && typeof leaseToken === 'string'
    ? { fetchRunId, leaseToken }
    : undefined;
}

/**
 * The delay Temporal waits after attempt `info.attempt` failed with `failure`: its
 * `nextRetryDelay` (activities/retry/timing.ts sets one on every retryable failure it can), else
 * the wait a breaker's refusal names (`retryAfterMs`), else what Temporal computes from the retry policy (initial × coefficient^(attempt−1), capped at the
 * maximum interval; Temporal's defaults where the policy is silent). Pure.
 */
export function retryDelayMs(
  failure: Pick<ApplicationFailure, 'nextRetryDelay' | 'details'>,
  info: Pick<Info, 'attempt' | 'retryPolicy'>,
): number {
  const given = msOptionalToNumber(failure.nextRetryDelay);
  if (given !== undefined) return given;
  // A breaker's refusal at a step's last attempt: the workflow runs the step again after this.
  const [details] = (failure.details ?? []) as { retryAfterMs?: unknown }[];
  if (typeof details?.retryAfterMs === 'number') return details.retryAfterMs;
  const policy = info.retryPolicy;
  const initial = msOptionalToNumber(policy?.initialInterval) ?? 1000;
  const coefficient = policy?.backoffCoefficient ?? 2;
  const maximum = msOptionalToNumber(policy?.maximumInterval) ?? 100 * initial;
  return Math.min(maximum, initial * coefficient ** Math.max(0, info.attempt - 1));
}

/**
 * Runs `write`; a failure is logged (its code only: no message, no URL) and swallowed — at debug
 * level when the database is unavailable, which the step's own failures already say, once per
 * attempt, during an outage.
 */
async function bestEffort(
  deps: Pick<ActivityDeps, 'log'>,
  fence: Fence,
  what: string,
  write: () => Promise<unknown>,
): Promise<void> {
  try {
    await write();
  } catch (err) {
    const level = databaseOutageCode(err) ? 'debug' : 'warn';
    deps.log[level]({ fetchRunId: fence.fetchRunId, code: codeOf(err) }, `could not record ${what}`);
  }
}

/**
 * At the start of an attempt after the first: the run whose step this is goes back from
 * `retry_wait` to `running`. No-op for a first attempt, for an activity that is not a step of a
 * run, or for a row that is not in `retry_wait`. Never throws.
 */
export async function markAttemptStarted(
  deps: Pick<ActivityDeps, 'prisma' | 'log'>,
  input: unknown,
): Promise<void> {
  const fence = fenceOf(input);
  const info = currentActivityInfo();
  if (!fence || !info || info.attempt <= 1) return;
  await bestEffort(deps, fence, 'the end of a retry wait', () => leaveRetryWait(deps.prisma, fence));
}

/**
 * After an attempt failed with the retryable `failure` and Temporal will try again: the run whose
 * step this is says `retry_wait`, with `next_run_at` (now + the delay Temporal was given), the
 * failure's error class and its redacted, bounded message. No-op for an activity that is not a
 * step of a run, and for DatabaseUnavailable. Never throws.
 */
export async function markRetryWait(
  deps: Pick<ActivityDeps, 'prisma' | 'log' | 'leaseTtlMs'>,
  input: unknown,
  failure: ApplicationFailure,
): Promise<void> {
  const fence = fenceOf(input);
  const info = currentActivityInfo();
  if (!fence || !info || failure.type === 'DatabaseUnavailable') return;
  const wait = {
    delayMs: retryDelayMs(failure, info),
    errorClass: failure.type ?? 'Internal',
    errorMessage: redactUrlsIn(failure.message).slice(0, MAX_KEPT_MESSAGE),
    leaseTtlMs: deps.leaseTtlMs,
  };
  await bestEffort(deps, fence, 'a retry wait', () => enterRetryWait(deps.prisma, fence, wait));
}
