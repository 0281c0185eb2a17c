/**
 * Finding — and, when needed, installing — `promtool`, Prometheus's rule checker, which `npm test`
 * runs against ops/alerts.yml (test/alerts.test.ts).
 *
 * Routes, in order: PROMTOOL_PATH, `promtool` on PATH, /usr/bin/promtool, then Debian's
 * `prometheus` package (which ships promtool) installed with apt-get — as root, or through sudo
 * when it exists. The install blocks service starts (policy-rc.d) so that it leaves no Prometheus
 * daemon listening on :9090.
 *
 * Usage: `npx tsx scripts/promtool.ts` prints the path (installing when needed).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { errorMessage, isUserFacingError, UserFacingError } from '../runtime/errors.ts';
import { findOnPath, isExecutableFile } from '../worker/executables.ts';

const SYSTEM_PROMTOOL = '/usr/bin/promtool';
const POLICY_RC_D = '/usr/sbin/policy-rc.d';
const run = promisify(execFile);

/** Options for {@link resolvePromtool}. */
export interface ResolvePromtoolOptions {
  /** Environment read for PROMTOOL_PATH and PATH; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Whether a missing promtool may be installed from Debian's `prometheus` package; default true. */
  install?: boolean;
  /** Receives short progress lines (the install takes a while). */
  log?: (line: string) => void;
}

/** Runs `args` as root: directly when this process is root, else through sudo; throws when neither. */
function asRoot(): (file: string, args: string[], env: NodeJS.ProcessEnv) => Promise<unknown> {
  const root = process.getuid?.() === 0;
  if (!root && !existsSync('/usr/bin/sudo')) {
    throw new Error('not root and no /usr/bin/sudo to become root');
  }
  return (file, args, env) =>
    root
      ? run(file, args, { env, timeout: 600_000, maxBuffer: 16 * 1024 * 1024 })
      : run('sudo', ['-n', 'env', `DEBIAN_FRONTEND=${env.DEBIAN_FRONTEND ?? ''}`, file, ...args], {
          env,
          timeout: 600_000,
          maxBuffer: 16 * 1024 * 1024,
        });
}

/**
 * `apt-get update && apt-get install -y --no-install-recommends prometheus`, with service starts
 * refused by a policy-rc.d that exists only for the duration of the install (an existing one is
 * left alone) so no Prometheus daemon is started.
 */
async function installDebianPrometheus(log: (line: string) => void): Promise<void> {
  if (!existsSync('/usr/bin/apt-get')) throw new Error('no /usr/bin/apt-get (not a Debian-like system)');
  const exec = asRoot();
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const ownPolicy = !existsSync(POLICY_RC_D);
  if (ownPolicy) {
    await exec(
      'sh',
      ['-c', `printf '#!/bin/sh\\nexit 101\\n' > ${POLICY_RC_D} && chmod 755 ${POLICY_RC_D}`],
      env,
    );
  }
  try {
    log('promtool: apt-get update');
    await exec('apt-get', ['update'], env);
    log('promtool: apt-get install -y --no-install-recommends prometheus');
    await exec('apt-get', ['install', '-y', '--no-install-recommends', 'prometheus'], env);
  } finally {
    if (ownPolicy) await exec('rm', ['-f', POLICY_RC_D], env).catch(() => undefined);
  }
}

/**
 * Returns the absolute path of a runnable promtool, installing Debian's `prometheus` package when
 * none is found and `install` is on. Throws `UserFacingError` code `PROMTOOL_NOT_FOUND` listing
 * every route tried and why it failed.
 */
export async function resolvePromtool(options: ResolvePromtoolOptions = {}): Promise<string> {
  const env = options.env ?? process.env;
  const log = options.log ?? (() => {});
  const tried: string[] = [];

  const explicit = env.PROMTOOL_PATH;
  if (explicit) {
    if (await isExecutableFile(explicit)) return path.resolve(explicit);
    throw new UserFacingError(
      `PROMTOOL_PATH=${explicit} is not an executable file: point it at promtool or unset it.`,
      'PROMTOOL_PATH_INVALID',
    );
  }
  tried.push('PROMTOOL_PATH: not set');

  const onPath = await findOnPath('promtool', env.PATH);
  if (onPath) return onPath;
  tried.push('`promtool` on PATH: not found');

  if (await isExecutableFile(SYSTEM_PROMTOOL)) return SYSTEM_PROMTOOL;
  tried.push(`${SYSTEM_PROMTOOL}: missing`);

  if (options.install === false) {
    tried.push("Debian's prometheus package: install not allowed here");
  } else {
    try {
      await installDebianPrometheus(log);
      if (await isExecutableFile(SYSTEM_PROMTOOL)) return SYSTEM_PROMTOOL;
      tried.push(`Debian's prometheus package: installed, but ${SYSTEM_PROMTOOL} is still missing`);
    } catch (error) {
      tried.push(`Debian's prometheus package: install failed: ${errorMessage(error).split('\n')[0]}`);
    }
  }

  throw new UserFacingError(
    [
      'promtool (Prometheus rule checker) was not found. Tried:',
      ...tried.map((t) => `  - ${t}`),
      'Fix: install it as root with `apt-get update && apt-get install -y --no-install-recommends prometheus`,',
      'or set PROMTOOL_PATH to a promtool binary.',
    ].join('\n'),
    'PROMTOOL_NOT_FOUND',
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    console.log(await resolvePromtool({ log: (line) => console.error(`[promtool] ${line}`) }));
  } catch (error) {
    console.error(isUserFacingError(error) ? error.message : error);
    process.exitCode = 1;
  }
}
