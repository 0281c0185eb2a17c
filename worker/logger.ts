import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * The process logger: JSON lines on stderr, with secrets redacted by pino's own redaction
 * (R11: no credentials in logs). Issue #8 routes the Temporal SDK's logger here too.
 */
export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid, ...bindings },
      redact: {
        paths: ['*.authorization', '*.password', '*.token', '*.secret', 'headers.*', '*.databaseUrl'],
        censor: '[redacted]',
      },
    },
    pino.destination(2),
  );
}
