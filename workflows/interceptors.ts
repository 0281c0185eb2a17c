/**
 * Workflow interceptors of durable-fetch (R10): every log line of a workflow carries its
 * run's business key and correlation id (the SDK adds workflowId and runId), and every activity
 * and child workflow it starts gets both in its headers, so that their log lines carry them too
 * (activities/log-context.ts reads them).
 *
 * They also check every step a run starts against its maximum run time before it is started, so
 * that the deadline's timer is started only when a step could end past it (workflows/run-deadline.ts).
 *
 * Registered by worker/worker.ts (`interceptors.workflowModules`); a pre-built bundle must include
 * this module (`bundleWorkflowCode({ workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES })`).
 * Deterministic: headers and log attributes add no commands, the sink call is not replayed into
 * history, and the deadline's timer is started from workflow time and the step's own options.
 */
import {
  type ActivateInput,
  type ActivityInput,
  defaultPayloadConverter,
  type GetLogAttributesInput,
  type Headers,
  type LocalActivityInput,
  type Next,
  type Payload,
  proxySinks,
  type StartChildWorkflowExecutionInput,
  type TimerInput,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptorsFactory,
  type WorkflowInternalsInterceptor,
  type WorkflowOutboundCallsInterceptor,
  workflowInfo,
} from '@temporalio/workflow';
import { idempotencyKeyFor, jobTypeOf } from '../contract/business-key.ts';
import {
  BUSINESS_KEY_HEADER,
  businessKeyOfWorkflowId,
  CORRELATION_ID_HEADER,
  type LogContextSinks,
  type RunLogContext,
} from '../contract/log-context.ts';
import { beforeStep, checkStepsAgainstDeadline, durationMs } from './run-deadline.ts';

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 ? value : undefined;

function headerText(headers: Headers | null | undefined, name: string): string | undefined {
  const payload = headers?.[name];
  if (!payload) return undefined;
  try {
    return text(defaultPayloadConverter.fromPayload(payload));
  } catch {
    return undefined;
  }
}

/**
 * The run's context from its first argument and headers: its own correlation id
 * (`fetchRunWorkflow`), else its parent's (a compensation started by a run), else its replay
 * id (`replay:<id>`, the correlation id of the runs a replay starts). The business key from the
 * workflow id, else the input's source and date.
 */
function contextOf(workflowId: string, arg: unknown, headers: Headers | null | undefined): RunLogContext {
  const input = typeof arg === 'object' && arg !== null ? (arg as Record<string, unknown>) : {};
  const replayId = text(input.replayId);
  const correlationId =
    text(input.correlationId) ??
    headerText(headers, CORRELATION_ID_HEADER) ??
    (replayId ? `replay:${replayId}` : undefined);
  const sourceId = text(input.sourceId);
  const businessDate = text(input.businessDate);
  const businessKey =
    businessKeyOfWorkflowId(workflowId) ??
    headerText(headers, BUSINESS_KEY_HEADER) ??
    (sourceId && businessDate
      ? idempotencyKeyFor({ jobType: jobTypeOf({ jobType: text(input.jobType) }), sourceId, businessDate })
      : undefined);
  return {
    ...(businessKey ? { businessKey } : {}),
    ...(correlationId ? { correlationId } : {}),
  };
}

const sameContext = (a: RunLogContext, b: RunLogContext) =>
  a.businessKey === b.businessKey && a.correlationId === b.correlationId;

/** One instance per workflow execution (the SDK calls the factory for each). */
export const interceptors: WorkflowInterceptorsFactory = () => {
  checkStepsAgainstDeadline();
  let context: RunLogContext = {};
  const { logContext } = proxySinks<LogContextSinks>();
  const remember = (next: RunLogContext) => {
    if (sameContext(context, next)) return;
    context = next;
    logContext.remember(context);
  };

  /** Headers for what this run starts: its context, unless the caller set them already. */
  const withContext = (headers: Headers): Headers => {
    const added: Record<string, Payload> = {};
    if (context.correlationId && !headers[CORRELATION_ID_HEADER])
      added[CORRELATION_ID_HEADER] = defaultPayloadConverter.toPayload(context.correlationId);
    if (context.businessKey && !headers[BUSINESS_KEY_HEADER])
      added[BUSINESS_KEY_HEADER] = defaultPayloadConverter.toPayload(context.businessKey);
    return { ...headers, ...added };
  };

  // Before the workflow function (and the SDK's own "Workflow started" line): read the input as
  // it arrives in the start job.
  const internals: WorkflowInternalsInterceptor = {
    activate(input: ActivateInput, next: Next<WorkflowInternalsInterceptor, 'activate'>): void {
      for (const job of input.activation.jobs ?? []) {
        const start = job.initializeWorkflow;
        if (!start) continue;
        let arg: unknown;
        try {
          const first = start.arguments?.[0];
          arg = first ? defaultPayloadConverter.fromPayload(first) : undefined;
        } catch {
          arg = undefined; // not JSON: the decoded input below still gets a say
        }
        remember(contextOf(workflowInfo().workflowId, arg, start.headers));
      }
      next(input);
    },
  };

  // The input as the worker's payload converter decoded it: authoritative.
  const inbound: WorkflowInboundCallsInterceptor = {
    execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) {
      remember(contextOf(workflowInfo().workflowId, input.args[0], input.headers));
      return next(input);
    },
  };

  const outbound: WorkflowOutboundCallsInterceptor = {
    getLogAttributes(
      input: GetLogAttributesInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>,
    ) {
      return next({ ...input, ...context });
    },
    // A step lasts at most its schedule-to-close (none set: no bound known).
    scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
      beforeStep(durationMs(input.options.scheduleToCloseTimeout));
      return next({ ...input, headers: withContext(input.headers) });
    },
    scheduleLocalActivity(
      input: LocalActivityInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
    ) {
      beforeStep(durationMs(input.options.scheduleToCloseTimeout));
      return next({ ...input, headers: withContext(input.headers) });
    },
    startTimer(input: TimerInput, next: Next<WorkflowOutboundCallsInterceptor, 'startTimer'>) {
      beforeStep(input.durationMs);
      return next(input);
    },
    startChildWorkflowExecution(
      input: StartChildWorkflowExecutionInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
    ) {
      beforeStep(undefined);
      return next({ ...input, headers: withContext(input.headers) });
    },
  };

  return { inbound: [inbound], outbound: [outbound], internals: [internals] };
};
