/**
 * What ties a run's log lines together across the workflow and its activities (R10): the headers
 * a run's activities and child workflows receive, and the business key a workflow id names. Shared
 * by the workflow interceptors (workflows/interceptors.ts) and the activities' log context
 * (activities/log-context.ts).
 */
import { idempotencyKeyFor, parseWorkflowId } from './business-key.ts';

/** Header carrying a run's correlation id to its activities and child workflows. */
export const CORRELATION_ID_HEADER = 'correlation-id';
/** Header carrying a run's business key (`fetch-records:<source>:<date>`) likewise. */
export const BUSINESS_KEY_HEADER = 'business-key';

/** What every log line about a run carries besides its workflow and run ids. */
export interface RunLogContext {
  businessKey?: string;
  correlationId?: string;
}

/**
 * Tells the worker process a run's log context as soon as the run starts, so that the SDK's
 * "Activity started" line of its first activity — logged before any interceptor sees the
 * activity's headers — carries it too (activities/log-context.ts `logContextSinks`).
 */
export type LogContextSinks = {
  logContext: { remember(context: RunLogContext): void };
};

/**
 * Business key of a workflow id: `fetch/<job>/<source>/<date>` and its compensation's
 * `compensate/<job>/<source>/<date>/r<round>` name one; other workflows (schedules, replays) do not.
 */
export function businessKeyOfWorkflowId(workflowId: string): string | undefined {
  const compensation = 'compensate/';
  const id = workflowId.startsWith(compensation)
    ? `fetch/${workflowId.slice(compensation.length).replace(/\/r\d+$/, '')}`
    : workflowId;
  const key = parseWorkflowId(id);
  return key ? idempotencyKeyFor(key) : undefined;
}
