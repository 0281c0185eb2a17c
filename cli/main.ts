/**
 * The `durable-fetch` command line, the one operators and developers type. User errors print one
 * line and exit 1; anything else is a bug and prints its stack.
 */
import { Command, CommanderError } from 'commander';
import packageJson from '../package.json' with { type: 'json' };
import { isUserFacingError } from '../runtime/errors.ts';
import { activeTracing, startTracing } from '../runtime/tracing-env.ts';
import type { CliContext } from './context.ts';
import { registerBreakers } from './commands/breakers.ts';
import { registerCleanup } from './commands/cleanup.ts';
import { registerCompensations } from './commands/compensations.ts';
import { registerCredentials } from './commands/credentials.ts';
import { registerDlq } from './commands/dlq/index.ts';
import { registerMigrate } from './commands/migrate.ts';
import { registerOutbox } from './commands/outbox.ts';
import { registerPublisher } from './commands/publisher.ts';
import { registerReconcile } from './commands/reconcile/index.ts';
import { registerRun } from './commands/run.ts';
import { registerRuns } from './commands/runs.ts';
import { registerSchedules } from './commands/schedules/index.ts';
import { registerSources } from './commands/sources/index.ts';
import { registerStatus } from './commands/status.ts';
import { registerWorker } from './commands/worker.ts';

/** Builds the program; `ctx` is created lazily so `--help` needs no configuration. */
export function buildProgram(ctx: () => CliContext): Command {
  const program = new Command('durable-fetch')
    .description('Scheduled fetch jobs that stay correct under crashes, retries, rate limits and outages.')
    // `--version`, `-V`: the package's own version (package.json is an input of the CLI build).
    .version(packageJson.version)
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();
  registerRun(program, ctx);
  registerRuns(program, ctx);
  registerSchedules(program, ctx);
  registerSources(program, ctx);
  registerBreakers(program, ctx);
  registerWorker(program, ctx);
  registerPublisher(program, ctx);
  registerOutbox(program, ctx);
  registerCompensations(program, ctx);
  registerCredentials(program, ctx);
  registerDlq(program, ctx);
  registerReconcile(program, ctx);
  registerStatus(program, ctx);
  registerMigrate(program, ctx);
  registerCleanup(program, ctx);
  return program;
}

/**
 * Runs the CLI with `argv` and returns the process exit code. The context's module (configuration,
 * database, Temporal) is imported just before an action runs, so help and usage errors load none
 * of it; each command's module likewise imports its implementation inside its action.
 */
export async function main(argv: string[]): Promise<number> {
  let context: CliContext | undefined;
  let createContext: (() => CliContext) | undefined;
  const ctx = () => {
    if (!createContext) throw new Error('the CLI context is used before any action ran');
    return (context ??= createContext());
  };
  try {
    // An application's own jobs (docs/jobs.md), registered before any command (or its help) asks
    // which jobs exist. Loaded only when named: the built-in jobs' code stays out of other starts.
    if (process.env.DURABLE_FETCH_JOBS) {
      const { loadJobModules } = await import('../jobs/registry.ts');
      await loadJobModules(process.env.DURABLE_FETCH_JOBS);
    }
    const program = buildProgram(ctx).hook('preAction', async (_program, action) => {
      // The long-running processes trace under their own names (worker/boot.ts); every other
      // command is `durable-fetch-cli`, and a run it starts is traced from its start.
      if (!LONG_RUNNING.has(action.name())) await startTracing('cli');
      const { createCliContext } = await import('./context.ts');
      createContext ??= () => createCliContext();
    });
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (isUserFacingError(err)) {
      console.error(`durable-fetch: ${err.message}`);
      return 1;
    }
    console.error(err);
    return 70;
  } finally {
    await context?.close();
    // Exports the command's spans before the process exits.
    await activeTracing()?.shutdown();
  }
}

/** The commands that boot a process of their own (worker/boot.ts), with its tracing. */
const LONG_RUNNING = new Set(['worker', 'publisher']);
