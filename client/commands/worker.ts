import type { Command } from 'commander';
import { startPeriodicCleanup } from '../../activities/cleanup.ts';
import { createActivityDeps } from '../../worker/activity-deps.ts';
import { createLogger } from '../../worker/logger.ts';
import { installRuntimeLogger } from '../../worker/runtime-logger.ts';
import { ensureSearchAttributes } from '../../worker/search-attributes.ts';
import { connectNative } from '../../worker/temporal.ts';
import { buildWorker } from '../../worker/worker.ts';
import type { CliContext } from '../cli-context.ts';

/** `durable-fetch worker`: a Temporal worker against the configured Temporal and PostgreSQL. */
export function registerWorker(program: Command, ctx: () => CliContext): void {
  program
    .command('worker')
    .description('run a worker (workflows + activities) on the task queue until SIGINT/SIGTERM')
    .action(async () => {
      const c = ctx();
      const { config } = c;
      const log = createLogger(config.logLevel, { process: 'worker' });
      installRuntimeLogger(log);
      const prisma = await c.prisma();
      const temporal = await c.temporal();
      // A shared cluster may lack our search attributes: register them (no-op when present).
      await ensureSearchAttributes(temporal.connection, config.temporal.namespace);
      const connection = await connectNative(config);
      const deps = createActivityDeps(config, prisma, log);
      const worker = await buildWorker({
        connection,
        namespace: config.temporal.namespace,
        taskQueue: config.temporal.taskQueue,
        deps,
      });
      const cleanup = startPeriodicCleanup(prisma, { intervalMs: config.runs.cleanupIntervalMs, log });
      const stop = () => worker.shutdown();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      log.info({ taskQueue: config.temporal.taskQueue }, 'worker running');
      console.error(`worker polling task queue '${config.temporal.taskQueue}' (Ctrl-C to stop)`);
      await worker.run();
      await cleanup.stop();
      await deps.http.close();
      await connection.close();
      console.error('worker stopped');
    });
}
