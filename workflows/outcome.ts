/**
 * How a workflow reports what happened: the error type of a failure (contract/error-types.ts), and
 * the `FetchStatus` search attribute operators filter on in the Web UI. Deterministic; workflow code only.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  TimeoutFailure,
  upsertSearchAttributes,
} from '@temporalio/workflow';

/** Error type, message and safe code of a failure. Temporal's own timeouts map to those error types. */
export function errorOf(err: unknown): { errorType: string; errorMessage: string; errorCode?: string } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) {
    const code = (cause.details?.[0] as { code?: unknown } | undefined)?.code;
    return {
      errorType: cause.type ?? 'Internal',
      errorMessage: cause.message,
      ...(typeof code === 'string' ? { errorCode: code } : {}),
    };
  }
  if (cause instanceof TimeoutFailure) {
    const deadline = cause.timeoutType === 'SCHEDULE_TO_CLOSE';
    return {
      errorType: deadline ? 'DeadlineExceeded' : 'Timeout',
      errorMessage: `activity ${deadline ? 'deadline' : 'timeout'} (${cause.timeoutType}) exceeded`,
    };
  }
  return { errorType: 'Internal', errorMessage: cause instanceof Error ? cause.message : String(cause) };
}

/** Sets the workflow's `FetchStatus` search attribute (visible and filterable in the Web UI). */
export function setStatus(status: string): void {
  upsertSearchAttributes([{ key: { name: 'FetchStatus', type: 'KEYWORD' }, value: status }]);
}
