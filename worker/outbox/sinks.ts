/**
 * Where outbox events go (R5). A sink delivers one event and resolves once the destination has
 * acknowledged it; it never marks anything itself. Every sink must let its destination drop a
 * re-delivery of the same event id (the publisher delivers at least once).
 *
 * Adding a sink: implement {@link Sink}, give it a name in {@link SINK_NAMES}, build it in
 * `createSinks` (worker/outbox/create-publisher.ts), and route topics to it with
 * DURABLE_FETCH_OUTBOX_ROUTES.
 */
import type { Prisma } from '../../prisma/generated/client.ts';

export const SINK_NAMES = ['webhook', 'nats', 'temporal'] as const;
export type SinkName = (typeof SINK_NAMES)[number];

/** One event as a sink sends it: the row's identity, order and payload. */
export interface OutboxMessage {
  /** The consumer's dedupe key: `Idempotency-Key` for webhooks, `Nats-Msg-Id` for JetStream. */
  id: string;
  /** Position in the outbox (increasing): consumers can order one aggregate's events by it. */
  seq: string;
  topic: string;
  aggregateType: string;
  aggregateId: string;
  payload: unknown;
  createdAt: Date;
}

export interface Sink {
  readonly name: SinkName;
  /**
   * Delivers `message` and resolves with the destination's receipt (stored on the row), once the
   * destination has acknowledged it. Rejects with anything; the publisher classifies it (DESIGN
   * error types) to decide between a retry and `dead`. Must stop promptly when `signal` aborts.
   */
  publish(message: OutboxMessage, signal: AbortSignal): Promise<Prisma.InputJsonValue | null>;
  /** Releases connections. */
  close(): Promise<void>;
}

/** A topic pattern (`fetch.page_stored`, or a prefix ending in `*`) and the sink it goes to. */
export interface Route {
  pattern: string;
  sink: SinkName;
}

/**
 * Parses `pattern=sink[,pattern=sink…]`, e.g. `fetch.*=webhook,temporal.start_workflow=temporal`.
 * Returns the routes in the given order (the first match wins), or a readable problem.
 */
export function parseRoutes(text: string): Route[] | { problem: string } {
  const routes: Route[] = [];
  for (const part of text.split(',').map((p) => p.trim())) {
    if (part === '') continue;
    const [pattern, sink, ...rest] = part.split('=').map((p) => p.trim());
    if (!pattern || !sink || rest.length > 0 || !/^([A-Za-z0-9._-]+\*?|\*)$/.test(pattern)) {
      return { problem: `'${part}' is not pattern=sink (pattern: a topic, or a prefix ending in *)` };
    }
    if (!(SINK_NAMES as readonly string[]).includes(sink)) {
      return { problem: `unknown sink '${sink}' (sinks: ${SINK_NAMES.join(', ')})` };
    }
    routes.push({ pattern, sink: sink as SinkName });
  }
  if (routes.length === 0) return { problem: 'no routes' };
  return routes;
}

/** The sink a topic goes to, or undefined when no route matches. */
export function sinkFor(routes: readonly Route[], topic: string): SinkName | undefined {
  return routes.find((r) =>
    r.pattern.endsWith('*') ? topic.startsWith(r.pattern.slice(0, -1)) : topic === r.pattern,
  )?.sink;
}
