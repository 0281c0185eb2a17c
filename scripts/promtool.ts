/**
 * Finding — and, when needed, installing — `promtool`, Prometheus's rule checker, which `npm test`
 * runs against ops/alerts.yml (test/alerts.test.ts), and the Prometheus server of the same package,
 * which the alert fault suite runs (test/faults/alerts-prometheus.test.ts).
 *
 * Routes, in order: PROMTOOL_PATH, `promtool` on PATH, /usr/bin/promtool, then Debian's
 * `prometheus` package (which ships promtool) installed with apt-get — as root, or through sudo
 * when it exists. The install blocks service starts (policy-rc.d) so that it leaves no Prometheus
 * daemon listening on :9090.
 *
 * Usage: `npx tsx scripts/promtool.ts` prints the path (installing when needed).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { errorMessage, isUserFacingError, UserFacingError } from '../runtime/errors.ts';
import { findOnPath, isExecutableFile } from '../worker/stack/executables.ts';
import { installDebianPackage } from './debian-package.ts';

const SYSTEM_PROMTOOL = '/usr/bin/promtool';
const SYSTEM_PROMETHEUS = '/usr/bin/prometheus';

/** Options for {@link resolvePromtool}. */
export interface ResolvePromtoolOptions {
  /** Environment read for PROMTOOL_PATH and PATH; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Whether a missing promtool may be installed from Debian's `prometheus` package; default true. */
  install?: boolean;
  /** Receives short progress lines (the install takes a while). */
  log?: (line: string) => void;
}

/**
 * Returns the absolute path of a runnable promtool, installing Debian's `prometheus` package when
 * none is found and `install` is on. Throws `UserFacingError` code `PROMTOOL_NOT_FOUND` listing
 * every route tried and why it failed.
 */
export function resolvePromtool(options: ResolvePromtoolOptions = {}): Promise<string> {
  return resolveFromPackage(PROMTOOL, options);
}

/**
 * Returns the absolute path of a runnable Prometheus server: PROMETHEUS_PATH, `prometheus` on PATH,
 * /usr/bin/prometheus, else Debian's `prometheus` package installed as {@link resolvePromtool}
 * does (no daemon is started; the caller runs its own on a port and config of its choosing).
 * Throws `UserFacingError` code `PROMETHEUS_NOT_FOUND` listing every route tried.
 */
export function resolvePrometheus(options: ResolvePromtoolOptions = {}): Promise<string> {
  return resolveFromPackage(PROMETHEUS, options);
}

/** A program of Debian's `prometheus` package: its name, what it is, its env override and path. */
interface PackageProgram {
  name: string;
  what: string;
  envVar: 'PROMTOOL_PATH' | 'PROMETHEUS_PATH';
  systemPath: string;
  codes: { invalid: string; notFound: string };
}

const PROMTOOL: PackageProgram = {
  name: 'promtool',
  what: 'Prometheus rule checker',
  envVar: 'PROMTOOL_PATH',
  systemPath: SYSTEM_PROMTOOL,
  codes: { invalid: 'PROMTOOL_PATH_INVALID', notFound: 'PROMTOOL_NOT_FOUND' },
};

const PROMETHEUS: PackageProgram = {
  name: 'prometheus',
  what: 'the Prometheus server',
  envVar: 'PROMETHEUS_PATH',
  systemPath: SYSTEM_PROMETHEUS,
  codes: { invalid: 'PROMETHEUS_PATH_INVALID', notFound: 'PROMETHEUS_NOT_FOUND' },
};

/** The routes of {@link resolvePromtool}, for either program of the package. */
async function resolveFromPackage(program: PackageProgram, options: ResolvePromtoolOptions): Promise<string> {
  const env = options.env ?? process.env;
  const log = options.log ?? (() => {});
  const tried: string[] = [];

  const explicit = env[program.envVar];
  if (explicit) {
    if (await isExecutableFile(explicit)) return path.resolve(explicit);
    throw new UserFacingError(
      `${program.envVar}=${explicit} is not an executable file: point it at ${program.name} or unset it.`,
      program.codes.invalid,
    );
  }
  tried.push(`${program.envVar}: not set`);

  const onPath = await findOnPath(program.name, env.PATH);
  if (onPath) return onPath;
  tried.push(`\`${program.name}\` on PATH: not found`);

  if (await isExecutableFile(program.systemPath)) return program.systemPath;
  tried.push(`${program.systemPath}: missing`);

  if (options.install === false) {
    tried.push("Debian's prometheus package: install not allowed here");
  } else {
    try {
      await installDebianPackage('prometheus', 'promtool', log);
      if (await isExecutableFile(program.systemPath)) return program.systemPath;
      tried.push(`Debian's prometheus package: installed, but ${program.systemPath} is still missing`);
    } catch (error) {
      tried.push(`Debian's prometheus package: install failed: ${errorMessage(error).split('\n')[0]}`);
    }
  }

  throw new UserFacingError(
    [
      `${program.name} (${program.what}) was not found. Tried:`,
      ...tried.map((t) => `  - ${t}`),
      'Fix: install it as root with `apt-get update && apt-get install -y --no-install-recommends prometheus`,',
      `or set ${program.envVar} to a ${program.name} binary.`,
    ].join('\n'),
    program.codes.notFound,
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
