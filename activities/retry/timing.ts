/**
 * Applies R7's retry timing to a retryable failure thrown inside an activity: the delay Temporal
 * waits before the next attempt is computed here (full jitter, or Retry-After clamped), and a
 * retry that could only happen after the activity's schedule-to-close deadline becomes a
 * non-retryable DeadlineExceeded at once.
 */
import { ApplicationFailure } from '@temporalio/common';
import { msOptionalToNumber } from '@temporalio/common/lib/time.js';
import { detailsOf, failure } from '../errors.ts';
import { nextRetry } from './delay.ts';
import { currentActivityInfo } from '../activity-info.ts';

/**
 * The ceiling of the jittered wait before a step asks our own database again while it is
 * unavailable, whatever the preset's exponential ceiling has grown to: a step that slept up to the
 * preset's 30 s or 1 min after the database came back left runs idle for most of a minute after
 * every outage. Each waiting step asks about once a second; a refused connection costs the database
 * next to nothing, and one that hangs is bounded by the pool's connect timeout.
 */
export const DATABASE_RETRY_CEILING_MS = 2_000;

/**
 * Returns `err` with `nextRetryDelay` set, DeadlineExceeded in its place, or `err` unchanged.
 * `stepDeadlineMs`: the step's deadline when the caller knows it better than the activity's info
 * does (a local fetch retried after a timer: FetchPageInput.stepDeadlineMs); the earlier one counts.
 */
export function withRetryTiming(
  err: unknown,
  now = Date.now(),
  random: () => number = Math.random,
  stepDeadlineMs?: number,
): unknown {
  if (!(err instanceof ApplicationFailure) || err.nonRetryable || err.nextRetryDelay !== undefined)
    return err;
  const info = currentActivityInfo();
  const policy = info?.retryPolicy;
  if (!info || !policy) return err;
  const maximumMs = msOptionalToNumber(policy.maximumInterval) ?? 100_000;
  const backoff = {
    initialMs: msOptionalToNumber(policy.initialInterval) ?? 1000,
    coefficient: policy.backoffCoefficient ?? 2,
    maximumMs:
      err.type === 'DatabaseUnavailable' ? Math.min(maximumMs, DATABASE_RETRY_CEILING_MS) : maximumMs,
  };
  // No retry after the last attempt: Temporal fails the activity itself.
  if (policy.maximumAttempts && info.attempt >= policy.maximumAttempts) return err;
  const infoDeadlineMs =
    info.scheduleToCloseTimeoutMs > 0 ? info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs : undefined;
  const deadlineMs =
    stepDeadlineMs === undefined || infoDeadlineMs === undefined
      ? (stepDeadlineMs ?? infoDeadlineMs)
      : Math.min(stepDeadlineMs, infoDeadlineMs);
  const decision = nextRetry({
    attempt: info.attempt,
    backoff,
    retryAfterMs: detailsOf(err)?.retryAfterMs,
    nowMs: now,
    deadlineMs,
    random,
  });
  if ('deadlineExceeded' in decision) {
    // Our own database still down, or the partner's breaker still holding calls back, at the
    // step's deadline: the workflow waits and runs the step again (workflows/database-outage.ts),
    // so the failure keeps saying what it is.
    if (err.type === 'DatabaseUnavailable' || err.type === 'CircuitOpen') {
      return ApplicationFailure.create({
        type: err.type,
        message: `${err.message} until the step's deadline`,
        details: err.details as unknown[],
        nonRetryable: true,
      });
    }
    return failure(
      'DeadlineExceeded',
      'DEADLINE_EXCEEDED',
      `${err.message}; the next attempt (in ${Math.ceil(decision.neededMs / 1000)} s) would be past the deadline`,
    );
  }
  return ApplicationFailure.create({
    type: err.type ?? undefined,
    message: err.message,
    details: err.details as unknown[],
    nextRetryDelay: decision.retryInMs,
  });
}
