/**
 * Finding — and, when needed, installing — PgBouncer, which the connection-pooler tests put in
 * front of PostgreSQL in transaction-pooling mode (test/pgbouncer.test.ts).
 *
 * Routes, in order: PGBOUNCER_PATH, `pgbouncer` on PATH, /usr/sbin/pgbouncer, then Debian's
 * `pgbouncer` package installed with apt-get — as root, or through sudo when it exists — with
 * service starts blocked, so that it leaves no PgBouncer daemon listening on :6432.
 *
 * Usage: `npx tsx scripts/pgbouncer.ts` prints the path (installing when needed).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { errorMessage, isUserFacingError, UserFacingError } from '../runtime/errors.ts';
import { findOnPath, isExecutableFile } from '../worker/stack/executables.ts';
import { installDebianPackage } from './debian-package.ts';

const SYSTEM_PGBOUNCER = '/usr/sbin/pgbouncer';

/** Options for {@link resolvePgbouncer}. */
export interface ResolvePgbouncerOptions {
  /** Environment read for PGBOUNCER_PATH and PATH; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Whether a missing pgbouncer may be installed from Debian's package; default true. */
  install?: boolean;
  /** Receives short progress lines (the install takes a while). */
  log?: (line: string) => void;
}

/**
 * Returns the absolute path of a runnable pgbouncer, installing Debian's `pgbouncer` package when
 * none is found and `install` is on. Throws `UserFacingError` code `PGBOUNCER_NOT_FOUND` listing
 * every route tried and why it failed.
 */
export async function resolvePgbouncer(options: ResolvePgbouncerOptions = {}): Promise<string> {
  const env = options.env ?? process.env;
  const log = options.log ?? (() => {});
  const tried: string[] = [];

  const explicit = env.PGBOUNCER_PATH;
  if (explicit) {
    if (await isExecutableFile(explicit)) return path.resolve(explicit);
    throw new UserFacingError(
      `PGBOUNCER_PATH=${explicit} is not an executable file: point it at pgbouncer or unset it.`,
      'PGBOUNCER_PATH_INVALID',
    );
  }
  tried.push('PGBOUNCER_PATH: not set');

  const onPath = await findOnPath('pgbouncer', env.PATH);
  if (onPath) return onPath;
  tried.push('`pgbouncer` on PATH: not found');

  if (await isExecutableFile(SYSTEM_PGBOUNCER)) return SYSTEM_PGBOUNCER;
  tried.push(`${SYSTEM_PGBOUNCER}: missing`);

  if (options.install === false) {
    tried.push("Debian's pgbouncer package: install not allowed here");
  } else {
    try {
      await installDebianPackage('pgbouncer', 'pgbouncer', log);
      if (await isExecutableFile(SYSTEM_PGBOUNCER)) return SYSTEM_PGBOUNCER;
      tried.push(`Debian's pgbouncer package: installed, but ${SYSTEM_PGBOUNCER} is still missing`);
    } catch (error) {
      tried.push(`Debian's pgbouncer package: install failed: ${errorMessage(error).split('\n')[0]}`);
    }
  }

  throw new UserFacingError(
    [
      'pgbouncer (the PostgreSQL connection pooler) was not found. Tried:',
      ...tried.map((t) => `  - ${t}`),
      'Fix: install it as root with `apt-get update && apt-get install -y --no-install-recommends pgbouncer`,',
      'or set PGBOUNCER_PATH to a pgbouncer binary.',
    ].join('\n'),
    'PGBOUNCER_NOT_FOUND',
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    console.log(await resolvePgbouncer({ log: (line) => console.error(`[pgbouncer] ${line}`) }));
  } catch (error) {
    console.error(isUserFacingError(error) ? error.message : error);
    process.exitCode = 1;
  }
}
