import { DefaultLogger, type LogEntry, type LogLevel, Runtime } from '@temporalio/worker';
import type { Logger } from '../runtime/logger.ts';

function summary(entry: LogEntry): Record<string, unknown> {
  const meta: Record<string, unknown> = { ...(entry.meta ?? {}) };
  const err: unknown = meta.error;
  // Keep the failure's type and message; stacks and task tokens are noise in an operator's log.
  if (err instanceof Error)
    meta.error = { type: (err as { type?: unknown }).type ?? err.name, message: err.message };
  delete meta.taskToken;
  return meta;
}

/**
 * Routes the Temporal SDK's own log (worker, activities, workflow sandbox) into `log`, from
 * `level` up, and — with `sdkMetricsAddress` (`host:port`) — exports the SDK's own metrics in
 * Prometheus format there (runtime/metrics/metrics.ts serves them with the app's). Must run before the
 * process creates its first Temporal connection.
 */
export function installRuntimeLogger(
  log: Logger,
  level: LogLevel = 'WARN',
  options: { sdkMetricsAddress?: string } = {},
): void {
  Runtime.install({
    ...(options.sdkMetricsAddress
      ? {
          telemetryOptions: {
            metrics: {
              prometheus: {
                bindAddress: options.sdkMetricsAddress,
                countersTotalSuffix: true,
                useSecondsForDurations: true,
              },
            },
          },
        }
      : {}),
    logger: new DefaultLogger(level, (entry) => {
      const fields = { sdk: true, ...summary(entry) };
      switch (entry.level) {
        case 'ERROR':
          return log.error(fields, entry.message);
        case 'WARN':
          return log.warn(fields, entry.message);
        case 'INFO':
          return log.info(fields, entry.message);
        default:
          return log.debug(fields, entry.message);
      }
    }),
  });
}
