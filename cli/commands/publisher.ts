import type { Command } from 'commander';
import type { CliContext } from '../context.ts';

/** The publisher's modules, imported only when it starts: help loads none of them. */
async function load() {
  const [db, logger, metrics, observability, publisher] = await Promise.all([
    import('../../worker/pool-size.ts'),
    import('../../runtime/logger.ts'),
    import('../../runtime/metrics.ts'),
    import('../../worker/observability.ts'),
    import('../../worker/outbox/create-publisher.ts'),
  ]);
  return { ...db, ...logger, ...metrics, ...observability, ...publisher };
}

const PUBLISHER_HELP = `
Delivers outbox events at least once to the sink their topic is routed to
(DURABLE_FETCH_OUTBOX_ROUTES, default: temporal.start_workflow=temporal,*=webhook — every job's events).
Run as many publishers as you like: each claims batches under a lease
(DURABLE_FETCH_OUTBOX_LEASE_MS) and only the current claim holder can mark an event published.
SIGINT/SIGTERM stops claiming, lets deliveries finish for DURABLE_FETCH_OUTBOX_GRACE_MS, releases
the rest and exits 0. Published events are deleted after DURABLE_FETCH_OUTBOX_RETENTION_DAYS.
It serves /metrics on DURABLE_FETCH_METRICS_HOST:DURABLE_FETCH_METRICS_PORT (default 0.0.0.0:9464;
0 = any free port); see docs/operations.md.`;

/** `durable-fetch publisher`: the outbox publisher loop until SIGINT/SIGTERM. */
export function registerPublisher(program: Command, ctx: () => CliContext): void {
  program
    .command('publisher')
    .description(
      'run an outbox publisher (delivers events to webhook / NATS / Temporal) until SIGINT/SIGTERM',
    )
    .addHelpText('after', PUBLISHER_HELP)
    .action(async () => {
      const { publisherPool, createLogger, createMetrics, startObservability, startPublisher } = await load();
      const c = ctx();
      const log = createLogger(c.config.logLevel, { process: 'publisher' });
      const prisma = await c.prisma(publisherPool());
      const runtime = { metrics: createMetrics() };
      const observability = await startObservability(c.config, runtime, {
        prisma,
        temporal: () => c.temporal(),
        log,
        taskQueues: [c.config.temporal.taskQueue],
      });
      const running = await startPublisher(c.config, prisma, () => c.temporal(), log, runtime.metrics);
      if (observability.url) console.error(`metrics at ${observability.url}`);
      const routes = c.config.outbox.routes.map((r) => `${r.pattern}→${r.sink}`).join(', ');
      log.info({ routes }, 'publisher running');
      console.error(`publisher running (routes: ${routes}; Ctrl-C to stop)`);
      await new Promise<void>((resolve) => {
        let signalled = false;
        const onSignal = () => {
          // A second signal means "now": undelivered claims come back when their lease expires.
          if (signalled) process.exit(130);
          signalled = true;
          resolve();
        };
        process.on('SIGINT', onSignal);
        process.on('SIGTERM', onSignal);
      });
      console.error('publisher stopping: finishing deliveries in flight');
      await running.stop();
      await observability.stop();
      const { published } = running.publisher.stats;
      console.error(`publisher stopped (${published} event${published === 1 ? '' : 's'} published)`);
    });
}
