/**
 * The `durable-fetch` program run inside the test's own process (cli/main.ts `main`): the same
 * commands, exit codes and messages as a child process (test/helpers/cli.ts `runCli`), without
 * the seconds a child's start-up costs — for tests that run many commands.
 */
import { format } from 'node:util';
import { main } from '../../cli/main.ts';
import type { CliResult } from './cli.ts';

/**
 * Runs `durable-fetch <args>` with `env` set in process.env for the call, and collects what
 * commands and `main` print (console.log, console.error). Commander's own help and usage text is
 * not collected: use runCli for those. Calls must not overlap: process.env and console are shared.
 */
export async function runCliInProcess(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<CliResult> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  const printed = { stdout: '', stderr: '' };
  const { log, error } = console;
  console.log = (...values: unknown[]) => void (printed.stdout += `${format(...values)}\n`);
  console.error = (...values: unknown[]) => void (printed.stderr += `${format(...values)}\n`);
  Object.assign(process.env, env);
  try {
    const code = await main([process.execPath, 'durable-fetch', ...args]);
    return { code, ...printed };
  } finally {
    Object.assign(console, { log, error });
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}
