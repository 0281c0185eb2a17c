import {
  DefaultLogger,
  type LogEntry,
  type LogLevel,
  makeTelemetryFilterString,
  Runtime,
} from '@temporalio/worker';
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
 * sdk-core's warning that a workflow task lasted over 5 s. Our runs' page fetches and database
 * steps are local activities by default, and the SDK keeps one workflow task open while one
 * follows another (extending it before it times out): a bulk pull of many pages is one long
 * workflow task by design, and the warning would then fire every few seconds for every healthy
 * run. It is logged at info, not dropped: a local fetch's slow partner shows in it too.
 */
const LONG_WORKFLOW_TASK = '[TMPRL1104]';

/**
 * Routes the Temporal SDK's own log (worker, activities, workflow sandbox, and sdk-core's from
 * WARN up, which it would otherwise print as text on stderr) into `log`, from `level` up, and —
 * with `sdkMetricsAddress` (`host:port`) — exports the SDK's own metrics in Prometheus format there
 * (runtime/metrics/metrics.ts serves them with the app's). Must run before the process creates its
 * first Temporal connection.
 */
export function installRuntimeLogger(
  log: Logger,
  level: LogLevel = 'WARN',
  options: { sdkMetricsAddress?: string } = {},
): void {
  Runtime.install({
    telemetryOptions: {
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }) },
      ...(options.sdkMetricsAddress
        ? {
            metrics: {
              prometheus: {
                bindAddress: options.sdkMetricsAddress,
                countersTotalSuffix: true,
                useSecondsForDurations: true,
              },
            },
          }
        : {}),
    },
    logger: new DefaultLogger(level, (entry) => {
      const fields = { sdk: true, ...summary(entry) };
      if (entry.level === 'WARN' && entry.message.startsWith(LONG_WORKFLOW_TASK))
        return log.info(fields, entry.message);
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
