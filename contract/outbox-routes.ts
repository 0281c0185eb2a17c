/**
 * Which sink each outbox topic goes to (R5): the sink names and DURABLE_FETCH_OUTBOX_ROUTES'
 * `pattern=sink` list. Pure, so that configuration can check the routes without loading a sink.
 */
export const SINK_NAMES = ['webhook', 'nats', 'temporal'] as const;
export type SinkName = (typeof SINK_NAMES)[number];

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
