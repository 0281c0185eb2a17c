/**
 * Runs the real `durable-fetch` command (bin/durable-fetch.js) as a child process, the way a user
 * does, with an environment built from scratch so nothing of the developer's shell leaks in.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../../runtime/config.ts';

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
  const base = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LOG_LEVEL: 'warn',
    NO_COLOR: '1',
    DURABLE_FETCH_METRICS_PORT: '0',
  };
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

/** A result's exit code, stdout and stderr, for assertion messages. */
export const detail = (r: CliResult) => `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

/** Exit 0, nothing on stderr; returns stdout. */
export function ok(result: CliResult): string {
  assert.equal(result.code, 0, detail(result));
  assert.equal(result.stderr, '', detail(result));
  return result.stdout;
}

/** Exit 0, nothing on stderr; returns stdout parsed as JSON. */
export function json<T>(result: CliResult): T {
  return JSON.parse(ok(result)) as T;
}

/** A user error: exit 1, nothing on stdout, exactly one `durable-fetch: …` line on stderr (no stack). */
export function assertOneLineError(result: CliResult, pattern: RegExp): void {
  assert.equal(result.code, 1, detail(result));
  assert.equal(result.stdout, '', detail(result));
  const errLines = lines(result.stderr);
  assert.equal(errLines.length, 1, detail(result));
  assert.doesNotMatch(result.stderr, /^\s+at /m, detail(result));
  assert.match(errLines[0]!, /^durable-fetch: /, detail(result));
  assert.match(errLines[0]!, pattern, detail(result));
}

/** A commander usage error: exit 1, the problem and the usage hint on stderr, nothing on stdout. */
export function assertUsageError(result: CliResult, pattern: RegExp): void {
  assert.equal(result.code, 1, detail(result));
  assert.equal(result.stdout, '', detail(result));
  assert.match(result.stderr, pattern, detail(result));
  assert.match(result.stderr, /add --help for usage/, detail(result));
}

/** The `key  value` lines of `show` (up to the first blank line), as a map. */
export function fieldsOf(stdout: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    if (line.trim() === '') break;
    const m = /^(\S.*?) {2,}(.*)$/.exec(line) ?? /^(\S.*?)\s*$/.exec(line);
    assert.ok(m, `a field line: ${line}`);
    fields.set(m[1]!, m[2] ?? '');
  }
  return fields;
}

/** Table lines split into cells (cells are separated by two or more spaces). */
export const cells = (line: string) => line.trim().split(/ {2,}/);
