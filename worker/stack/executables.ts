/**
 * Small, dependency-free helpers for finding and probing executables (the Temporal CLI, python3).
 */
import { execFile } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';

/**
 * True when `file` exists, is a regular file (symlinks followed) and the current user may execute
 * it. Never throws; read-only.
 */
export async function isExecutableFile(file: string): Promise<boolean> {
  try {
    const info = await stat(file);
    if (!info.isFile()) return false;
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The first executable called `name` in the directories of `searchPath` (a PATH value), like
 * `which`; `undefined` when none. Empty entries are skipped rather than meaning the current
 * directory. Never throws; read-only.
 */
export async function findOnPath(name: string, searchPath: string | undefined): Promise<string | undefined> {
  for (const dir of (searchPath ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    if (await isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Runs `file args…` without a shell and resolves with its stdout; rejects (with stderr in the
 * message) on a non-zero exit, a spawn failure or after `timeoutMs`.
 */
export function runForOutput(file: string, args: readonly string[], timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) {
        const detail = stderr.trim().split('\n').slice(-3).join(' | ');
        reject(new Error(detail ? `${error.message.split('\n')[0]}: ${detail}` : error.message));
      } else {
        resolve(stdout);
      }
    });
  });
}

/**
 * The version a Temporal CLI reports (`temporal --version` → "temporal version 1.9.1 (Server …)"
 * gives "1.9.1"). Rejects when the binary does not run or prints something unexpected.
 */
export async function temporalCliVersion(cliPath: string): Promise<string> {
  const output = await runForOutput(cliPath, ['--version'], 20_000);
  const match = /temporal version v?(\S+)/.exec(output);
  if (!match?.[1]) throw new Error(`unexpected \`--version\` output: ${output.trim().slice(0, 200)}`);
  return match[1];
}
