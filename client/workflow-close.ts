/**
 * How a run's workflow really ended, read from Temporal: the latest execution of its workflow id,
 * and for a closed one only its close event (never the whole history). Then what that means for
 * the run's row — the error type, safe code and redacted message `finishRun` records — as a
 * pure function. Used by the stuck-run sweep (client/stuck-runs.ts).
 */
import { MAX_KEPT_MESSAGE } from '../db/limits.ts';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { redactUrlsIn } from '../runtime/redact.ts';
import { COMPLETED_UNRECORDED } from '../contract/error-types.ts';
import { errorOf } from '../workflows/outcome.ts';

/** temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT (the proto package is CommonJS-only). */
const CLOSE_EVENT_ONLY = 2;

/** What the latest execution of a workflow id says about the run. */
export type WorkflowEnd =
  | { found: 'running' }
  | { found: 'failed'; runId: string; taskQueue: string; failure: unknown }
  | { found: 'terminated'; runId: string; taskQueue: string; reason: string; identity: string }
  | { found: 'timed_out'; runId: string; taskQueue: string }
  | { found: 'cancelled'; runId: string; taskQueue: string }
  | { found: 'completed'; runId: string; taskQueue: string }
  | { found: 'gone' };

/** An end that leaves the run's row to settle: every {@link WorkflowEnd} but `running`. */
export type ClosedEnd = Exclude<WorkflowEnd, { found: 'running' }>;

/** How a closed workflow's run is recorded: the arguments of `finishRunRow`, and why. */
export interface Settlement {
  status: 'dead_lettered' | 'cancelled';
  errorType?: string;
  errorCode?: string;
  errorMessage?: string;
  /** What was found, in words (redacted): the audit entry's reason and the CLI's line. */
  reason: string;
}

/**
 * Describes the LATEST execution of `workflowId` (no run id: the row's run id may name an
 * execution that continued as new or was reset) and, when it is closed, reads its close event.
 * Read-only. Anything not closed (running, paused) → `running`; not found → `gone`.
 * @throws the client's errors other than not-found (unreachable, permission denied).
 */
export async function readWorkflowEnd(temporal: Client, workflowId: string): Promise<WorkflowEnd> {
  let described;
  try {
    described = await temporal.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { found: 'gone' };
    throw err;
  }
  const { runId, taskQueue } = described;
  switch (described.status.name) {
    case 'COMPLETED':
      return { found: 'completed', runId, taskQueue };
    case 'CANCELLED':
      return { found: 'cancelled', runId, taskQueue };
    case 'TIMED_OUT':
      return { found: 'timed_out', runId, taskQueue };
    case 'TERMINATED':
      return closeEventOf(temporal, workflowId, runId, taskQueue);
    case 'FAILED': {
      const end = await closeEventOf(temporal, workflowId, runId, taskQueue);
      return end.found === 'failed'
        ? end
        : {
            found: 'failed',
            runId,
            taskQueue,
            failure: new Error('workflow failed; its close event holds no failure'),
          };
    }
    default:
      // Running, paused, or a state this SDK does not know: open as far as we can tell.
      return { found: 'running' };
  }
}

/** A terminated or failed execution's close event: the operator's reason, or the failure. */
async function closeEventOf(
  temporal: Client,
  workflowId: string,
  runId: string,
  taskQueue: string,
): Promise<ClosedEnd> {
  const response = await temporal.workflowService.getWorkflowExecutionHistory({
    namespace: temporal.options.namespace,
    execution: { workflowId, runId },
    historyEventFilterType: CLOSE_EVENT_ONLY,
  });
  const event = response.history?.events?.[0];
  const failed = event?.workflowExecutionFailedEventAttributes?.failure;
  if (failed) {
    const { failureConverter, payloadConverter } = temporal.options.loadedDataConverter;
    return {
      found: 'failed',
      runId,
      taskQueue,
      failure: failureConverter.failureToError(failed, payloadConverter),
    };
  }
  const terminated = event?.workflowExecutionTerminatedEventAttributes;
  return {
    found: 'terminated',
    runId,
    taskQueue,
    reason: terminated?.reason ?? '',
    identity: terminated?.identity ?? '',
  };
}

const clip = (text: string) => redactUrlsIn(text).slice(0, MAX_KEPT_MESSAGE);

/**
 * The error type, message and safe code of a workflow's failure: exactly what the
 * workflow's own `finish()` would have recorded (workflows/outcome.ts `errorOf`: the
 * ApplicationFailure under an ActivityFailure, Temporal's timeouts as error types), the message
 * redacted and cut short. Pure.
 */
export function failureFacts(failure: unknown): {
  errorType: string;
  errorMessage: string;
  errorCode?: string;
} {
  const facts = errorOf(failure);
  return { ...facts, errorMessage: clip(facts.errorMessage) };
}

/**
 * How a run whose workflow ended this way is recorded (R1, R11): failed → its own error;
 * terminated → `Internal`/`WORKFLOW_TERMINATED` with who and why; timed out →
 * `DeadlineExceeded`/`WORKFLOW_TIMED_OUT`; cancelled → `cancelled`; completed without the row
 * saying so → `Internal`/`WORKFLOW_COMPLETED_UNRECORDED`; gone → `Internal`/`WORKFLOW_GONE`. Pure.
 */
export function settlementOf(end: ClosedEnd): Settlement {
  switch (end.found) {
    case 'failed': {
      const facts = failureFacts(end.failure);
      return {
        status: 'dead_lettered',
        ...facts,
        reason: `workflow failed: ${facts.errorType}: ${facts.errorMessage}`,
      };
    }
    case 'terminated': {
      const by = end.identity ? ` by ${end.identity}` : '';
      const message = clip(`workflow terminated${by}: ${end.reason || 'no reason given'}`);
      return {
        status: 'dead_lettered',
        errorType: 'Internal',
        errorCode: 'WORKFLOW_TERMINATED',
        errorMessage: message,
        reason: message,
      };
    }
    case 'timed_out': {
      const message = 'workflow timed out (its execution or run timeout) before recording its end';
      return {
        status: 'dead_lettered',
        errorType: 'DeadlineExceeded',
        errorCode: 'WORKFLOW_TIMED_OUT',
        errorMessage: message,
        reason: message,
      };
    }
    case 'cancelled':
      return { status: 'cancelled', reason: 'workflow cancelled without recording its end' };
    case 'completed': {
      const message = 'workflow completed but the run was never recorded as succeeded';
      return {
        status: 'dead_lettered',
        errorType: 'Internal',
        errorCode: COMPLETED_UNRECORDED,
        errorMessage: message,
        reason: message,
      };
    }
    case 'gone': {
      const message = 'workflow not found in Temporal (deleted, or past its retention)';
      return {
        status: 'dead_lettered',
        errorType: 'Internal',
        errorCode: 'WORKFLOW_GONE',
        errorMessage: message,
        reason: message,
      };
    }
    default:
      return assertNever(end);
  }
}

function assertNever(value: never): never {
  throw new Error(`unhandled workflow end: ${JSON.stringify(value)}`);
}
