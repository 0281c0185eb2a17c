import type { Command } from 'commander';
import { redactUrl } from '../../runtime/redact.ts';
import type { CliContext } from '../context.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = async () => {
  const [m0, m1] = await Promise.all([
    import('../../runtime/config.ts'),
    import('../../db/prepare-database.ts'),
  ]);
  return { ...m0, ...m1 };
};

/** `durable-fetch migrate`: create the database if missing and apply the engine's migrations. */
export function registerMigrate(program: Command, ctx: () => CliContext): void {
  program
    .command('migrate')
    .description(
      "create the database if missing and apply the engine's pending migrations in its own schema, durable_fetch",
    )
    .addHelpText(
      'after',
      `
The engine's tables, types and functions live in the PostgreSQL schema durable_fetch, with their own
_prisma_migrations: an application's tables and migrations in public never see them (docs/jobs.md).
A database migrated when they lived in public is moved into durable_fetch once, rows and all.`,
    )
    .action(async () => {
      const m = await impl();
      const url = m.migrationUrl(ctx().config);
      const { applied } = await m.prepareDatabase(url, (line) => console.log(line));
      console.log(
        applied.length === 0
          ? `database at ${redactUrl(url)} is up to date`
          : `applied ${applied.length} migration(s) to ${redactUrl(url)}`,
      );
    });
}
