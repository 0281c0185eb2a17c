/**
 * The spans durable-fetch makes itself, beside those of @temporalio/interceptors-opentelemetry:
 * partner and webhook HTTP calls, store transactions, and outbox deliveries, with the standard
 * semantic attributes. Installed behind runtime/trace-spans.ts by runtime/tracing.ts when the
 * process traces; otherwise never loaded.
 *
 * No secret reaches an attribute: a URL is recorded without its credentials and with every query
 * value replaced (a partner may take its key as a query parameter), and no header is recorded.
 */
import type { IResource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { RunSpan } from '../contract/run-span.ts';
import type { DeliveredEvent, HttpCallSpan, SpanHooks } from './trace-spans.ts';
import {
  type Context,
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import {
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_SYSTEM_NAME,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_RESEND_COUNT,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from '@opentelemetry/semantic-conventions';

const tracer = () => trace.getTracer('durable-fetch');

/** What a query value is recorded as. */
export const REDACTED_QUERY_VALUE = 'REDACTED';

/** `url` as a span records it: no user or password, every query value {@link REDACTED_QUERY_VALUE}. */
export function urlForSpan(url: URL): string {
  const shown = new URL(url.href);
  shown.username = '';
  shown.password = '';
  const names = [...new Set(shown.searchParams.keys())];
  for (const name of names) shown.searchParams.set(name, REDACTED_QUERY_VALUE);
  shown.hash = '';
  return shown.href;
}

function defaultPort(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/**
 * Starts the client span of one HTTP request (one hop of a redirect chain: `resendCount` hops
 * before it). The span is `{method}`, as the HTTP conventions name a client span without a route.
 */
function startHttpCall(method: string, url: URL, resendCount: number): HttpCallSpan {
  const span = tracer().startSpan(method, {
    kind: SpanKind.CLIENT,
    attributes: {
      [ATTR_HTTP_REQUEST_METHOD]: method,
      [ATTR_SERVER_ADDRESS]: url.hostname,
      [ATTR_SERVER_PORT]: defaultPort(url),
      [ATTR_URL_FULL]: urlForSpan(url),
      ...(resendCount > 0 ? { [ATTR_HTTP_REQUEST_RESEND_COUNT]: resendCount } : {}),
    },
  });
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), headers);
  let ended = false;
  return {
    headers,
    end(outcome) {
      if (ended) return;
      ended = true;
      if ('status' in outcome) {
        span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, outcome.status);
        if (outcome.status >= 400) {
          span.setAttribute(ATTR_ERROR_TYPE, String(outcome.status));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
      } else {
        failed(span, outcome.error);
      }
      span.end();
    },
  };
}

/** Marks `span` failed with the error's type (its class or Temporal failure type), not its message. */
function failed(span: Span, error: unknown): void {
  const type = (error as { type?: unknown } | null)?.type;
  span.setAttribute(
    ATTR_ERROR_TYPE,
    typeof type === 'string' ? type : error instanceof Error ? error.name : 'Error',
  );
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** Runs `fn` in a new active span, ended (and marked failed on a throw) when `fn` settles. */
async function inSpan<T>(
  name: string,
  options: { kind: SpanKind; attributes: Record<string, string | number> },
  fn: () => Promise<T>,
  parent: Context = context.active(),
): Promise<T> {
  return tracer().startActiveSpan(name, options, parent, async (span) => {
    try {
      return await fn();
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** A store transaction of the engine (`BEGIN` … `COMMIT` on PostgreSQL), named for what it stores. */
function inDbTransactionSpan<T>(name: string, fn: () => Promise<T>): Promise<T> {
  return inSpan(
    name,
    {
      kind: SpanKind.CLIENT,
      attributes: { [ATTR_DB_SYSTEM_NAME]: 'postgresql', [ATTR_DB_OPERATION_NAME]: 'TRANSACTION' },
    },
    fn,
  );
}

/** The W3C trace context of the active span, to store beside what it writes; undefined without one. */
function currentTraceContext(): Record<string, string> | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? carrier : undefined;
}

// Messaging attributes are still "incubating" in the semantic conventions: copied here, as their
// package asks, rather than imported from its unstable entry point.
const ATTR_MESSAGING_SYSTEM = 'messaging.system';
const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name';
const ATTR_MESSAGING_MESSAGE_ID = 'messaging.message.id';

/**
 * One outbox delivery (`send {topic}`, a producer span) as a child of the span that wrote the
 * event (`stored`: its stored trace context), so the delivery and what its sink carries on (the
 * consumer's `traceparent`, a started run) join the trace of the run that wrote it.
 */
function inDeliverySpan<T>(event: DeliveredEvent, fn: () => Promise<T>): Promise<T> {
  const parent = event.traceContext
    ? propagation.extract(context.active(), event.traceContext)
    : context.active();
  return inSpan(
    `send ${event.topic}`,
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        [ATTR_MESSAGING_SYSTEM]: event.sink,
        [ATTR_MESSAGING_OPERATION_TYPE]: 'send',
        [ATTR_MESSAGING_DESTINATION_NAME]: event.topic,
        [ATTR_MESSAGING_MESSAGE_ID]: event.id,
      },
    },
    fn,
    parent,
  );
}

/** The active span's ids for a log line (`trace_id`, `span_id`), or nothing outside a span. */
function logTraceIds(): { trace_id?: string; span_id?: string } {
  const ids = trace.getSpan(context.active())?.spanContext();
  return ids && trace.isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : {};
}

const hrTime = (ms: number): [number, number] => [Math.floor(ms / 1000), (ms % 1000) * 1e6];

/**
 * A run's span as its workflow reported it (workflows/trace-interceptors.ts), as the span
 * processor takes a finished span: a server span of the trace the run was started in.
 */
export function readableRunSpan(run: RunSpan, resource: IResource): ReadableSpan {
  const context = { traceId: run.traceId, spanId: run.spanId, traceFlags: run.traceFlags };
  return {
    name: run.name,
    kind: SpanKind.SERVER,
    spanContext: () => context,
    ...(run.parentSpanId ? { parentSpanId: run.parentSpanId } : {}),
    startTime: hrTime(run.startMs),
    endTime: hrTime(run.endMs),
    duration: hrTime(Math.max(0, run.endMs - run.startMs)),
    status: { code: run.failed ? SpanStatusCode.ERROR : SpanStatusCode.UNSET },
    attributes: run.attributes,
    links: [],
    events: [],
    ended: true,
    resource,
    instrumentationLibrary: { name: 'durable-fetch' },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/** The hooks runtime/trace-spans.ts calls while the process traces. */
export const otelSpans: SpanHooks = {
  startHttpCall,
  inDbTransactionSpan,
  inDeliverySpan,
  currentTraceContext,
  logTraceIds,
};
