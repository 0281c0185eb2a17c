/**
 * The `type` of every ApplicationFailure an activity throws: the error classes of R7, retryable
 * (transient) or not (permanent). Retry policies list the non-retryable ones by name, so
 * classification never depends on JS class names.
 */

export const RETRYABLE_ERROR_TYPES = [
  'Timeout',
  'NetworkError',
  'UpstreamUnavailable',
  'RateLimited',
  'CircuitOpen',
  'DatabaseUnavailable',
] as const;

export const NON_RETRYABLE_ERROR_TYPES = [
  'InvalidInput',
  'InvalidResponse',
  'PermissionDenied',
  'NotFound',
  'IdempotencyConflict',
  'DeadlineExceeded',
  'OutcomeUnknown',
  // A write whose fencing token is no longer the run's current one
  // (R1, R9). Retrying cannot help: another owner holds the run.
  'LeaseLost',
  // Anything the classifier does not recognise — in practice a bug.
  // Failing at once, visibly, beats retrying a bug until the attempts run out.
  'Internal',
] as const;

export type RetryableErrorType = (typeof RETRYABLE_ERROR_TYPES)[number];
export type NonRetryableErrorType = (typeof NON_RETRYABLE_ERROR_TYPES)[number];
export type ErrorType = RetryableErrorType | NonRetryableErrorType;

export function isRetryableErrorType(type: string): type is RetryableErrorType {
  return (RETRYABLE_ERROR_TYPES as readonly string[]).includes(type);
}

/**
 * The code of a `LeaseLost` whose run ended under the caller's own lease token: the execution was
 * started from an earlier point of its history than the run's end (a Web UI Reset of a
 * continued-as-new execution, or to a workflow task before the end). The workflow claims the run
 * anew, as a first execution would (workflows/fetch-records.ts).
 */
export const RUN_ENDED = 'RUN_ENDED';

/**
 * The code of a run settled as dead-lettered because Temporal says its workflow completed while
 * its row never said succeeded: the database lost what the workflow did (restored to an older
 * point than Temporal's state, client/workflow-close.ts). Its retry runs the key again, and looks
 * up the downstream actions the database no longer knows of before acting (db/ledger/intent.ts).
 */
export const COMPLETED_UNRECORDED = 'WORKFLOW_COMPLETED_UNRECORDED';

/**
 * The code of the `PermissionDenied` every caller of an OAuth2 credential gets while its provider
 * has refused the refresh token for good (activities/credentials/token-provider.ts). A run waits
 * for an operator's `credentials set` instead of failing (workflows/database-outage.ts).
 */
export const NEEDS_REAUTHORIZATION = 'CREDENTIAL_NEEDS_REAUTHORIZATION';
