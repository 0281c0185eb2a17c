/**
 * OpenTelemetry in workflows (@temporalio/interceptors-opentelemetry): a span for each run, its
 * context handed to every step, local steps included, and to child runs in their headers, so that
 * each attempt's span on the worker (an activity interceptor there) is the run span's child; and
 * `trace_id`/`span_id` on the run's log lines.
 *
 * One span per run, not one more per scheduled step as the package's own outbound interceptor
 * makes: spans are built inside the workflow and copied out through the `exporter` sink, and each
 * step's attempts have spans of their own on the worker all the same (18 spans per run became 11).
 *
 * Bundled only into the workflows of a worker that traces (worker/worker.ts
 * `workflowInterceptorModules`). A run may move between traced and untraced workers: these
 * interceptors add no command, and the replay gate replays every recorded history both with and
 * without them.
 */
import { context, isSpanContextValid, trace } from '@opentelemetry/api';
import { headersWithContext } from '@temporalio/interceptors-opentelemetry/lib/instrumentation.js';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type {
  ActivityInput,
  GetLogAttributesInput,
  LocalActivityInput,
  Next,
  StartChildWorkflowExecutionInput,
  WorkflowInterceptorsFactory,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

/** The run's span to what it starts, in the package's own header (`_tracer-data`). */
const outbound: WorkflowOutboundCallsInterceptor = {
  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    return next({ ...input, headers: headersWithContext(input.headers) });
  },
  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ) {
    return next({ ...input, headers: headersWithContext(input.headers) });
  },
  startChildWorkflowExecution(
    input: StartChildWorkflowExecutionInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
  ) {
    return next({ ...input, headers: headersWithContext(input.headers) });
  },
  getLogAttributes(
    input: GetLogAttributesInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>,
  ) {
    const ids = trace.getSpan(context.active())?.spanContext();
    return next(
      ids && isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId, ...input } : input,
    );
  },
};

export const interceptors: WorkflowInterceptorsFactory = () => ({
  // First: its constructor registers the workflow's tracer and propagator that `outbound` uses.
  inbound: [new OpenTelemetryInboundInterceptor()],
  outbound: [outbound],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
