/**
 * OpenTelemetry's workflow interceptors (@temporalio/interceptors-opentelemetry): a span for the
 * run and one for each step it schedules, local steps included, each step's span handed to the
 * activity in its headers, and `trace_id`/`span_id` on the run's log lines.
 *
 * Bundled into every worker's workflows whether or not the process exports traces, so that a run
 * runs the same code on every worker: the spans leave the workflow only through the `exporter`
 * sink, which drops them where tracing is off (worker/worker.ts). Deterministic: spans add no
 * commands, and the sink call is not replayed.
 */
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [new OpenTelemetryInboundInterceptor()],
  outbound: [new OpenTelemetryOutboundInterceptor()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
