/**
 * Runs the real `durable-fetch` command (bin/durable-fetch.js) as a child process, the way a user
 * does, with an environment built from scratch so nothing of the developer's shell leaks in.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../../worker/config.ts';

const BIN = path.join(PROJECT_ROOT, 'bin', 'durable-fetch.js');

export interface CliResult {
  /** Exit code; null when the process was killed (e.g. by the timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `durable-fetch <args>` with cwd = project root and env = PATH, HOME, LOG_LEVEL=warn plus `env`.
 * Never rejects on a non-zero exit: the caller asserts on `code`. A process still running after
 * `timeoutMs` is killed (code null), so a hanging command fails its test instead of the whole run.
 */
export function runCli(
  args: readonly string[],
  env: Record<string, string | undefined> = {},
  timeoutMs = 60_000,
): Promise<CliResult> {
  const base = { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', NO_COLOR: '1' };
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: PROJECT_ROOT, env: { ...base, ...env }, timeout: timeoutMs, encoding: 'utf8' },
      (error, stdout, stderr) => {
        // A string code (ENOENT, EACCES…) means the process could not be started at all.
        if (error && typeof error.code === 'string') {
          return reject(new Error(`cannot run ${BIN}: ${error.message}`, { cause: error }));
        }
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Non-empty lines of `text`. */
export function lines(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '');
}
