/**
 * Named retry presets (STYLE 4). Each sets its timeouts, bounds and non-retryable types; sources
 * pick one by name. Issue #3 adds full jitter (via nextRetryDelay), Retry-After and deadlines.
 */
import type { ActivityOptions } from '@temporalio/workflow';
import { NON_RETRYABLE_ERROR_TYPES } from './error-types.ts';

const nonRetryableErrorTypes = [...NON_RETRYABLE_ERROR_TYPES];

export const RETRY_PRESETS = {
  /** Reads from a partner over HTTP: short attempts, heartbeats between partner pages. */
  partnerHttp: {
    startToCloseTimeout: '2 minutes',
    scheduleToCloseTimeout: '30 minutes',
    heartbeatTimeout: '30 seconds',
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '1 minute',
      maximumAttempts: 10,
      nonRetryableErrorTypes,
    },
  },
  /** Transactions against our own PostgreSQL. */
  database: {
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: '10 minutes',
    retry: {
      initialInterval: '500 milliseconds',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      maximumAttempts: 20,
      nonRetryableErrorTypes,
    },
  },
} as const satisfies Record<string, ActivityOptions>;

export type RetryPresetName = keyof typeof RETRY_PRESETS;
