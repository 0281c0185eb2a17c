import { pino, type DestinationStream, type Logger } from 'pino';
import { logTraceIds } from './trace-spans.ts';

export type { Logger };

/** Keys whose values are secrets wherever they appear (top level or up to two objects down). */
export const SECRET_LOG_KEYS = [
  'authorization',
  'Authorization',
  'cookie',
  'Cookie',
  'token',
  'accessToken',
  'access_token',
  'refreshToken',
  'refresh_token',
  'password',
  'secret',
  'clientSecret',
  'client_secret',
  'apiKey',
  'api_key',
  'apikey',
  'databaseUrl',
] as const;

/** pino `redact` paths: every {@link SECRET_LOG_KEYS} key at the first three levels, and all headers. */
export const REDACT_PATHS = [
  ...SECRET_LOG_KEYS.flatMap((key) => [key, `*.${key}`, `*.*.${key}`]),
  'headers.*',
  '*.headers.*',
];

export const REDACTED = '[redacted]';

/**
 * The process logger: JSON lines on stderr (or `destination`), with secrets redacted by pino's own
 * redaction (R11: no credentials in logs). installRuntimeLogger routes the Temporal SDK's logger
 * here too, and lines about a run carry its ids (activities/log-context.ts, workflows/interceptors.ts).
 * A line written inside a span carries the span's `trace_id` and `span_id` (runtime/tracing.ts).
 */
export function createLogger(
  level: string,
  bindings: Record<string, unknown> = {},
  destination: DestinationStream = pino.destination(2),
): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid, ...bindings },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      mixin: logTraceIds,
    },
    destination,
  );
}
