/**
 * How a workflow reports what happened: the error type of a failure (contract/error-types.ts), and
 * the `FetchStatus` search attribute operators filter on in the Web UI. Deterministic; workflow code only.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  patched,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Every value of `FetchStatus` (docs/runs.md lists them; a test holds the two together). A run's
 * workflow shows its run's status in the run row's own words (`fetch_run.status`), plus `paused`
 * (running, waiting at a page boundary while its source is paused; the row says `running`),
 * `awaiting_reauthorization` (running, a step waiting for an operator to set a new token of the
 * OAuth2 credential it uses; the row says `running`) and `duplicate` (not a run of its own: the
 * key's run belongs to another workflow). A compensation workflow shows its progress in the
 * ledger's words (`compensating`, `needs_manual`, `compensated`).
 * `retry_wait` is never shown: a step waiting for its next attempt is an activity retry inside a
 * `running` workflow (the Web UI shows the pending attempt).
 */
export const FETCH_STATUSES = [
  'queued',
  'running',
  'paused',
  'awaiting_reauthorization',
  'succeeded',
  'duplicate',
  'dead_lettered',
  'cancelled',
  'compensating',
  'needs_manual',
  'compensated',
] as const;
export type FetchStatus = (typeof FETCH_STATUSES)[number];

/**
 * What runs wrote for `dead_lettered` before FetchStatus used the run's words: executions started
 * before {@link RUN_STATUS_WORDS} still write it when they replay, and runs that ended so show it.
 */
export const LEGACY_DEAD_LETTERED_STATUS = 'failed';

/** Patch id: histories recorded before it wrote `failed` for a run that failed for good. */
const RUN_STATUS_WORDS = 'fetch-status-run-words';

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

/**
 * Sets the workflow's `FetchStatus` search attribute (visible and filterable in the Web UI).
 * `dead_lettered` is written as {@link LEGACY_DEAD_LETTERED_STATUS} by an execution that did so
 * before the rename (so that its history replays).
 */
export function setStatus(status: FetchStatus): void {
  const value =
    status === 'dead_lettered' && !patched(RUN_STATUS_WORDS) ? LEGACY_DEAD_LETTERED_STATUS : status;
  upsertSearchAttributes([{ key: { name: 'FetchStatus', type: 'KEYWORD' }, value }]);
}

/** The `FetchStatus` search attribute's key, for starters and readers in workflow code. */
export const FETCH_STATUS_KEY = defineSearchAttributeKey('FetchStatus', SearchAttributeType.KEYWORD);

/** Patch id: child runs started before it showed `queued` until their claim. */
const RUNNING_AT_START = 'run-status-running-at-start';

/** The `FetchStatus` a workflow gives a run it starts: `running` (`queued` in earlier histories). */
export function statusAtStart(): FetchStatus {
  return patched(RUNNING_AT_START) ? 'running' : 'queued';
}

/** Patch id: histories recorded before it upserted the status whatever the execution showed. */
const STATUS_SHOWN = 'status-upsert-only-when-changed';

/**
 * Sets `FetchStatus` to `status` unless the execution shows it already: a starter that gives it
 * at start saves the upsert, which Temporal Cloud bills as an Action (attributes given at start are
 * free). Deterministic: the attributes an execution shows are its start's and its own upserts'.
 */
export function ensureStatus(status: FetchStatus): void {
  const shown = workflowInfo().typedSearchAttributes.get(FETCH_STATUS_KEY) === status;
  if (!(shown && patched(STATUS_SHOWN))) setStatus(status);
}
