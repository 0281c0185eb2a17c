/**
 * Named retry presets. Each sets its timeouts, bounds and non-retryable types; sources
 * pick a partner preset by name (`Source.retryPolicy`). Temporal's RetryPolicy has no jitter: the
 * activity computes each delay itself (full jitter under this exponential ceiling, or the
 * partner's Retry-After clamped to `maximumInterval`) and hands it over as `nextRetryDelay`; a
 * retry that would land past `scheduleToCloseTimeout` (the overall deadline) fails at once with
 * DeadlineExceeded (activities/retry/timing.ts).
 */
import { ActivityCancellationType, type ActivityOptions } from '@temporalio/common';
import { NON_RETRYABLE_ERROR_TYPES } from './error-types.ts';

const nonRetryableErrorTypes = [...NON_RETRYABLE_ERROR_TYPES];

export const RETRY_PRESETS = {
  /** Reads from a partner over HTTP: short attempts, heartbeats between partner pages. */
  partnerHttp: {
    startToCloseTimeout: '2 minutes',
    // In ms: a local fetch's input carries its step's deadline (workflows/partner-dispatch.ts).
    scheduleToCloseTimeout: 30 * 60_000,
    heartbeatTimeout: '30 seconds',
    // A cancelled run ends only once its partner call has really stopped.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '1 minute',
      maximumAttempts: 10,
      nonRetryableErrorTypes,
    },
  },
  /** Partners behind a user waiting for the answer: fail within two minutes rather than half an hour. */
  partnerHttpQuick: {
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: 2 * 60_000,
    heartbeatTimeout: '10 seconds',
    // A cancelled run ends only once its partner call has really stopped.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '500 milliseconds',
      backoffCoefficient: 2,
      maximumInterval: '10 seconds',
      maximumAttempts: 6,
      nonRetryableErrorTypes,
    },
  },
  /**
   * Transactions against our own PostgreSQL: short by design (a page is stored in well under a
   * second), so that a worker that died mid-transaction is noticed and retried within 10 s.
   */
  database: {
    startToCloseTimeout: '10 seconds',
    scheduleToCloseTimeout: '10 minutes',
    retry: {
      initialInterval: '500 milliseconds',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      maximumAttempts: 20,
      nonRetryableErrorTypes,
    },
  },
  /**
   * Recording how a run ended, and finding what its compensation must settle: retried until the
   * database is back, however long that takes (no attempt limit, no overall deadline), so that a
   * workflow never closes while its row still says `running`. Only a non-retryable failure (a
   * bug) stops it; the stuck-run sweep then settles the row.
   */
  recordOutcome: {
    startToCloseTimeout: '10 seconds',
    retry: {
      initialInterval: '500 milliseconds',
      backoffCoefficient: 2,
      maximumInterval: '1 minute',
      maximumAttempts: Number.POSITIVE_INFINITY,
      nonRetryableErrorTypes,
    },
  },
  /**
   * A non-idempotent downstream call. The activity never lets a failure of the call
   * itself reach Temporal's retry: an unknown outcome ends it as OutcomeUnknown (non-retryable)
   * and the workflow reconciles. What Temporal does retry is a worker that died mid-call (noticed
   * by the 5 s heartbeat timeout) or a failed ledger write: the retried attempt sees the intent
   * recorded before it and reconciles instead of calling again.
   */
  downstreamSubmit: {
    startToCloseTimeout: '1 minute',
    scheduleToCloseTimeout: '5 minutes',
    heartbeatTimeout: '5 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '10 seconds',
      maximumAttempts: 5,
      nonRetryableErrorTypes,
    },
  },
  /** A downstream call that is idempotent by the partner's id (confirm): retried like a read. */
  downstreamCall: {
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: '5 minutes',
    heartbeatTimeout: '5 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      maximumAttempts: 8,
      nonRetryableErrorTypes,
    },
  },
  /**
   * Looking up an effect by its reference to settle an unknown outcome: then `needs_manual`. The
   * wait for a call's settle window is the workflow's (a durable timer), not this preset's.
   */
  reconcileLookup: {
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: '2 minutes',
    heartbeatTimeout: '5 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '500 milliseconds',
      backoffCoefficient: 2,
      maximumInterval: '5 seconds',
      maximumAttempts: 5,
      nonRetryableErrorTypes,
    },
  },
  /** Undoing an effect (void): a bounded budget, then `needs_manual` — never swallowed. */
  compensation: {
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: '5 minutes',
    heartbeatTimeout: '5 seconds',
    retry: {
      initialInterval: '500 milliseconds',
      backoffCoefficient: 2,
      maximumInterval: '5 seconds',
      maximumAttempts: 5,
      nonRetryableErrorTypes,
    },
  },
} as const satisfies Record<string, ActivityOptions>;

export type RetryPresetName = keyof typeof RETRY_PRESETS;

/** The presets a source may name for its partner calls. */
export const PARTNER_PRESETS = [
  'partnerHttp',
  'partnerHttpQuick',
] as const satisfies readonly RetryPresetName[];
export type PartnerPresetName = (typeof PARTNER_PRESETS)[number];

/**
 * The longest wait before a local page fetch's retry that the worker sleeps through inside the
 * workflow task; a longer one is a durable timer (activities/pages/local-stop.ts relies on it).
 */
export const LOCAL_FETCH_RETRY_THRESHOLD_MS = 10_000;

export function isPartnerPreset(name: string): name is PartnerPresetName {
  return (PARTNER_PRESETS as readonly string[]).includes(name);
}
