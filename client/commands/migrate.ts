import type { Command } from 'commander';
import { databaseUrl } from '../../worker/config.ts';
import { prepareDatabase } from '../../worker/prepare-database.ts';
import { redactUrl } from '../../runtime/redact.ts';
import type { CliContext } from '../cli-context.ts';

/** `durable-fetch migrate`: create the database if missing and apply prisma/migrations. */
export function registerMigrate(program: Command, ctx: () => CliContext): void {
  program
    .command('migrate')
    .description('create the database if missing and apply pending migrations (prisma/migrations)')
    .action(async () => {
      const url = databaseUrl(ctx().config);
      const { applied } = await prepareDatabase(url, (line) => console.log(line));
      console.log(
        applied.length === 0
          ? `database at ${redactUrl(url)} is up to date`
          : `applied ${applied.length} migration(s) to ${redactUrl(url)}`,
      );
    });
}
