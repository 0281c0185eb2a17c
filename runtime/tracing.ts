/**
 * OpenTelemetry traces for every process (R10): with the standard `OTEL_*` variables set, the
 * process registers a tracer provider that exports OTLP over HTTP, the W3C `traceparent`
 * propagator and an async-local context, so that a run is one trace from whoever started it,
 * through its workflow (workflows/trace-interceptors.ts) and activities (Temporal's
 * @temporalio/interceptors-opentelemetry), its partner calls
 * and store transactions, to the publisher's deliveries and the consumers beyond (docs/tracing.md).
 *
 * Unset, nothing is registered and OpenTelemetry is not even loaded: the engine's span helpers
 * (runtime/trace-spans.ts) only run what they wrap.
 *
 * Loaded only when traces are wanted (runtime/tracing-env.ts): the SDK and its exporter cost a
 * command's start, and nothing else in the process needs them.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { envDetectorSync, Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import packageJson from '../package.json' with { type: 'json' };
import { UserFacingError } from './errors.ts';
import { otelSpans, readableRunSpan } from './otel-spans.ts';
import type { RunSpan } from '../contract/run-span.ts';
import { installSpanHooks } from './trace-spans.ts';

/** A process's tracing: what the Temporal worker needs to export its workflows' spans, and the stop. */
export interface Tracing {
  resource: Resource;
  spanProcessor: SpanProcessor;
  /** Exports a run's span, as its workflow reported it (workflows/trace-interceptors.ts). */
  exportRunSpan(span: RunSpan): void;
  /** Exports what is still buffered and stops; at the process's stop. */
  shutdown(): Promise<void>;
}

/**
 * Registers the process's tracer provider (OTLP over HTTP, batched), the W3C propagator and an
 * async-local context manager; `stopped` runs once it has shut down. Called through
 * `startTracing` (runtime/tracing-env.ts), which checks that traces are wanted.
 * @throws UserFacingError on an OTEL_* setting this build cannot honour.
 */
export function createTracing(processName: string, stopped: () => void): Tracing {
  // The exporter reads its settings from the process's environment; so does this check.
  const env = process.env;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (protocol !== undefined && !protocol.startsWith('http/')) {
    throw new UserFacingError(
      `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: durable-fetch exports OTLP over HTTP (unset it, or use http/json and the collector's HTTP port, 4318)`,
      'CONFIG_INVALID',
    );
  }
  const resource = Resource.default()
    .merge(new Resource({ [ATTR_SERVICE_NAME]: `durable-fetch-${processName}` }))
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the name above.
    .merge(envDetectorSync.detect())
    .merge(new Resource({ [ATTR_SERVICE_VERSION]: packageJson.version }));
  // The exporter and the batch processor read the rest of their settings (endpoint, headers,
  // timeouts, OTEL_BSP_*) from the environment themselves, as the specification has it.
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter());
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  installSpanHooks(otelSpans);
  return {
    resource,
    spanProcessor,
    exportRunSpan: (span) => spanProcessor.onEnd(readableRunSpan(span, resource)),
    async shutdown() {
      installSpanHooks(undefined);
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
      stopped();
    },
  };
}
