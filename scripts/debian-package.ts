/**
 * Installing a Debian package that a test needs (Prometheus's `promtool`, PgBouncer), so that
 * `npm test` on a fresh machine gets it by itself: apt-get as root, or through sudo when it
 * exists, with service starts blocked for the install so that no daemon is left listening on the
 * package's default port (the test runs its own on a port and config of its choosing).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const POLICY_RC_D = '/usr/sbin/policy-rc.d';
const run = promisify(execFile);

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
 * `apt-get update && apt-get install -y --no-install-recommends <name>`, with service starts
 * refused by a policy-rc.d that exists only for the duration of the install (an existing one is
 * left alone). Each step is reported through `log`, prefixed with `tag`.
 * @throws Error when not on a Debian-like system, when root cannot be had, or when apt-get fails.
 */
export async function installDebianPackage(
  name: string,
  tag: string,
  log: (line: string) => void,
): Promise<void> {
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
    log(`${tag}: apt-get update`);
    await exec('apt-get', ['update'], env);
    log(`${tag}: apt-get install -y --no-install-recommends ${name}`);
    await exec('apt-get', ['install', '-y', '--no-install-recommends', name], env);
  } finally {
    if (ownPolicy) await exec('rm', ['-f', POLICY_RC_D], env).catch(() => undefined);
  }
}
