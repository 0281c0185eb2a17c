/**
 * `durable-fetch credentials …` as an operator runs it: the real command as a child process, the
 * refresh token written to its stdin (`… < token-file`), never on its command line.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../../runtime/config.ts';
import type { CliResult } from './cli.ts';

/** Runs `durable-fetch <args>` against `databaseUrl` with `stdin` written to it; never rejects. */
export function credentialsCli(
  databaseUrl: string,
  args: readonly string[],
  stdin = '',
  env: Record<string, string> = {},
): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'durable-fetch.js'), ...args], {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATABASE_URL: databaseUrl,
        LOG_LEVEL: 'warn',
        ...env,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/** The arguments of `credentials set <id>` for a refresh-token credential at the demo partner. */
export function setArgs(id: string, partnerUrl: string, clientId: string, secretRef: string): string[] {
  return [
    'credentials',
    'set',
    id,
    '--grant',
    'refresh_token',
    '--token-url',
    `${partnerUrl}/oauth/token`,
    '--client-id',
    clientId,
    '--client-secret-ref',
    secretRef,
    '--reason',
    'reauthorized after invalid_grant',
  ];
}
