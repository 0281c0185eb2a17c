import type { Command } from 'commander';
import type { CliContext } from '../context.ts';

const PUBLISHER_HELP = `
Delivers outbox events at least once to the sink their topic is routed to
(DURABLE_FETCH_OUTBOX_ROUTES, default: temporal.start_workflow=temporal,*=webhook — every job's events).
Run as many publishers as you like: each claims batches under a lease
(DURABLE_FETCH_OUTBOX_LEASE_MS) and only the current claim holder can mark an event published.
SIGINT/SIGTERM stops claiming, lets deliveries finish for DURABLE_FETCH_OUTBOX_GRACE_MS, releases
the rest and exits 0. Published events are deleted after DURABLE_FETCH_OUTBOX_RETENTION_DAYS.
It serves /metrics on DURABLE_FETCH_METRICS_HOST:DURABLE_FETCH_METRICS_PORT (default 0.0.0.0:9464;
0 = any free port), with /livez (200 while it answers) and /readyz (200 only while it claims: 503
while starting and from SIGTERM on); see docs/operations.md.`;

/** `durable-fetch publisher`: the outbox publisher loop until SIGINT/SIGTERM. */
export function registerPublisher(program: Command, ctx: () => CliContext): void {
  program
    .command('publisher')
    .description(
      'run an outbox publisher (delivers events to webhook / NATS / Temporal) until SIGINT/SIGTERM',
    )
    .addHelpText('after', PUBLISHER_HELP)
    .action(async () => {
      // Imported only when it runs: help loads none of the publisher.
      const { runPublisher } = await import('../../worker/outbox/run-publisher.ts');
      await runPublisher(ctx().config);
    });
}
