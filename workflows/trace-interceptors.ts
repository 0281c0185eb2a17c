/**
 * A run's span, and its context handed to every step (local steps included), child run and next
 * execution of a continued run, so that each attempt's span on the worker (Temporal's
 * OpenTelemetry activity interceptor there) is the run span's child; and `trace_id`/`span_id` on
 * the run's log lines.
 *
 * Made here without OpenTelemetry's SDK: Temporal's own workflow interceptors build a tracer
 * provider and an async-local context inside every run, which cost a traced worker a quarter of
 * its throughput (bench/tracing.ts: 0.78 with them, a span per run). Here the run's span is plain
 * data: its ids come from the start's `_tracer-data` header (Temporal's, which its client
 * interceptor writes) and the run id, its times from workflow time, and the worker exports it
 * when the run's function ends (the `runSpan` sink, worker/worker.ts).
 *
 * Bundled only into the workflows of a worker that traces (worker/worker.ts
 * `workflowInterceptorModules`). Deterministic, and a run may move between traced and untraced
 * workers: no command, no workflow randomness used (the ids derive from the run id), and the sink
 * call is not replayed; the replay gate replays every recorded history with and without this.
 */
import {
  type ActivityInput,
  type ContinueAsNewInput,
  ContinueAsNew,
  defaultPayloadConverter,
  type GetLogAttributesInput,
  type Headers,
  type LocalActivityInput,
  type Next,
  type Payload,
  proxySinks,
  type StartChildWorkflowExecutionInput,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
  workflowInfo,
} from '@temporalio/workflow';
import { type RunSpan, type RunSpanSinks, TRACE_HEADER } from '../contract/run-span.ts';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The W3C context the run was started with (its `_tracer-data` header), when it has one. */
function parentOf(headers: Headers): { traceId: string; spanId: string; flags: number } | undefined {
  const payload = headers[TRACE_HEADER];
  if (!payload) return undefined;
  try {
    const carrier = defaultPayloadConverter.fromPayload<{ traceparent?: unknown }>(payload);
    const match = typeof carrier.traceparent === 'string' ? TRACEPARENT.exec(carrier.traceparent) : null;
    return match ? { traceId: match[1]!, spanId: match[2]!, flags: parseInt(match[3]!, 16) } : undefined;
  } catch {
    return undefined;
  }
}

/** One instance per workflow execution (the SDK calls the factory for each). */
export const interceptors: WorkflowInterceptorsFactory = () => {
  const { runSpan } = proxySinks<RunSpanSinks>();
  let header: Payload | undefined;
  let ids: { trace_id: string; span_id: string } | undefined;

  const inbound: WorkflowInboundCallsInterceptor = {
    async execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) {
      const info = workflowInfo();
      const parent = parentOf(input.headers);
      // A run id is 32 hex digits: a new trace is named by it, the run's span by its last 16.
      const hex = info.runId.replace(/-/g, '').toLowerCase();
      const span = { traceId: parent?.traceId ?? hex, spanId: hex.slice(16), flags: parent?.flags ?? 1 };
      const flags = span.flags.toString(16).padStart(2, '0');
      header = defaultPayloadConverter.toPayload({
        traceparent: `00-${span.traceId}-${span.spanId}-${flags}`,
      });
      ids = { trace_id: span.traceId, span_id: span.spanId };
      const startMs = Date.now();
      let failed = false;
      try {
        return await next(input);
      } catch (err) {
        failed = !(err instanceof ContinueAsNew);
        throw err;
      } finally {
        const ended: RunSpan = {
          traceId: span.traceId,
          spanId: span.spanId,
          ...(parent ? { parentSpanId: parent.spanId } : {}),
          traceFlags: span.flags,
          name: `RunWorkflow:${info.workflowType}`,
          startMs,
          endMs: Date.now(),
          failed,
          attributes: {
            temporalWorkflowId: info.workflowId,
            run_id: info.runId,
            workflowType: info.workflowType,
            taskQueue: info.taskQueue,
          },
        };
        runSpan.ended(ended);
      }
    },
  };

  const withSpan = (headers: Headers): Headers => (header ? { ...headers, [TRACE_HEADER]: header } : headers);
  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
      return next({ ...input, headers: withSpan(input.headers) });
    },
    scheduleLocalActivity(
      input: LocalActivityInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
    ) {
      return next({ ...input, headers: withSpan(input.headers) });
    },
    startChildWorkflowExecution(
      input: StartChildWorkflowExecutionInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
    ) {
      return next({ ...input, headers: withSpan(input.headers) });
    },
    // The next execution of a continued run: its span is this one's child, in the same trace.
    continueAsNew(input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>) {
      return next({ ...input, headers: withSpan(input.headers) });
    },
    getLogAttributes(
      input: GetLogAttributesInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>,
    ) {
      return next(ids ? { ...ids, ...input } : input);
    },
  };

  return { inbound: [inbound], outbound: [outbound] };
};
