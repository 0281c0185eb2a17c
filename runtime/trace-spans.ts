/**
 * Where the engine makes its own spans — partner and webhook HTTP calls, store transactions,
 * outbox deliveries — and reads the trace it runs in (for outbox events and log lines). Without
 * tracing each call here only runs what it wraps, without loading OpenTelemetry at all: the
 * tracing implementation (runtime/otel-spans.ts) is installed by runtime/tracing.ts when the
 * process traces, so a process that does not trace pays nothing for it.
 */

/** An HTTP call in flight: the headers that carry its span to the server, and its end. */
export interface HttpCallSpan {
  /** `traceparent` (and `tracestate`) for the request; empty without tracing. */
  headers: Record<string, string>;
  /** Ends the span with the response's status, or with what failed; later calls do nothing. */
  end(outcome: { status: number } | { error: unknown }): void;
}

/** An outbox event as its delivery span needs it. */
export interface DeliveredEvent {
  id: string;
  topic: string;
  /** The sink it goes to (`webhook`, `nats`, `temporal`). */
  sink: string;
  /** W3C trace context of the span that wrote it, when that one traced. */
  traceContext?: Record<string, string> | undefined;
}

export interface SpanHooks {
  /** One HTTP request (one hop of a redirect chain: `resendCount` hops before it). */
  startHttpCall(method: string, url: URL, resendCount: number): HttpCallSpan;
  /** A store transaction, named for what it stores. */
  inDbTransactionSpan<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** One outbox delivery, as the child of the span that wrote the event. */
  inDeliverySpan<T>(event: DeliveredEvent, fn: () => Promise<T>): Promise<T>;
  /** The W3C trace context of the active span, to store beside what it writes. */
  currentTraceContext(): Record<string, string> | undefined;
  /** The active span's ids for a log line, as a new object (pino's mixin: it is merged into). */
  logTraceIds(): { trace_id?: string; span_id?: string };
}

const NO_HEADERS: Record<string, string> = Object.freeze({});
const UNTRACED_CALL: HttpCallSpan = { headers: NO_HEADERS, end: () => undefined };

const UNTRACED: SpanHooks = {
  startHttpCall: () => UNTRACED_CALL,
  inDbTransactionSpan: (_name, fn) => fn(),
  inDeliverySpan: (_event, fn) => fn(),
  currentTraceContext: () => undefined,
  // A new object each time: pino merges the line's fields into it.
  logTraceIds: () => ({}),
};

let hooks: SpanHooks = UNTRACED;

/** Installs the tracing implementation (runtime/tracing.ts), or removes it (undefined). */
export function installSpanHooks(traced: SpanHooks | undefined): void {
  hooks = traced ?? UNTRACED;
}

export const startHttpCall = (method: string, url: URL, resendCount = 0): HttpCallSpan =>
  hooks.startHttpCall(method, url, resendCount);
export const inDbTransactionSpan = <T>(name: string, fn: () => Promise<T>): Promise<T> =>
  hooks.inDbTransactionSpan(name, fn);
export const inDeliverySpan = <T>(event: DeliveredEvent, fn: () => Promise<T>): Promise<T> =>
  hooks.inDeliverySpan(event, fn);
export const currentTraceContext = (): Record<string, string> | undefined => hooks.currentTraceContext();
export const logTraceIds = (): { trace_id?: string; span_id?: string } => hooks.logTraceIds();
