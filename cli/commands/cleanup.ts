import type { Command } from 'commander';
import { deleteExpired } from '../../activities/cleanup.ts';
import type { CliContext } from '../context.ts';
import { printJson } from './output.ts';

const RETENTION_HELP = `
Idempotency records and staged pages expire DURABLE_FETCH_IDEMPOTENCY_RETENTION_DAYS (default 30)
after they were written. That retention is the dedupe window: a step repeated within it returns its
stored result, a step repeated after it is no longer recognised as a repeat, so expired rows can go.
Published outbox events go after DURABLE_FETCH_OUTBOX_RETENTION_DAYS (default 7); pending and dead
ones are never deleted. Per-second partner call counts (the circuit breakers' and retry budgets'
windows, R8) go two hours after their second. Workers (expired rows) and publishers (expired
rows and published events)
run a pass every DURABLE_FETCH_CLEANUP_INTERVAL_MS (default 600000 = 10 min; 0 turns it off); this
command runs one pass now. Safe to
run while workers and publishers run: concurrent passes skip each other's rows and never delete a
row twice.`;

/** `durable-fetch cleanup [--json]`: one pass of expired-row deletion. */
export function registerCleanup(program: Command, ctx: () => CliContext): void {
  program
    .command('cleanup')
    .description(
      'delete expired idempotency records, staged pages and published outbox events (one pass, in batches)',
    )
    .option('--json', 'print JSON')
    .addHelpText('after', RETENTION_HELP)
    .action(async (opts: { json?: boolean }) => {
      const c = ctx();
      const deleted = await deleteExpired(await c.prisma(), {
        publishedEventRetentionMs: c.config.outbox.retentionMs,
      });
      if (opts.json) return printJson(deleted);
      console.log(
        `deleted ${deleted.idempotencyRecords} idempotency records, ${deleted.stagedPages} staged pages` +
          `, ${deleted.publishedEvents} published outbox events and ${deleted.callCounts} old partner call counts`,
      );
    });
}
