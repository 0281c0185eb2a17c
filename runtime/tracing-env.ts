/**
 * Whether the environment asks for traces, and the process's tracing once started — without
 * loading OpenTelemetry's SDK, which only runtime/tracing.ts imports, and only when traces are
 * wanted: the CLI checks this on every command, and its `--help` must stay fast.
 */
import type { Tracing } from './tracing.ts';

export type { Tracing };

/**
 * The standard variables decide, as the OpenTelemetry specification defines them: an OTLP
 * endpoint (OTEL_EXPORTER_OTLP_ENDPOINT, or its traces-only form) turns export on;
 * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turns it off.
 */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

let current: Tracing | undefined;

/** The process's tracing, once {@link startTracing} has started it. */
export function activeTracing(): Tracing | undefined {
  return current;
}

/**
 * Starts the process's tracing when its environment asks for it, once per process (a later call
 * returns the first). `processName` names the service (`durable-fetch-<name>`) unless
 * OTEL_SERVICE_NAME does. @throws UserFacingError on an OTEL_* setting this build cannot honour.
 */
export async function startTracing(processName: string): Promise<Tracing | undefined> {
  if (current || !tracingWanted()) return current;
  const { createTracing } = await import('./tracing.ts');
  current ??= createTracing(processName, () => (current = undefined));
  return current;
}
