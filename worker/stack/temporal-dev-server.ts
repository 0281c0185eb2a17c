/**
 * A local Temporal server for development and tests: the real server inside the Temporal CLI
 * (`temporal server start-dev`), on SQLite or in memory, with durable-fetch's search attributes.
 */
import { spawn } from 'node:child_process';
import { openSync, closeSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { errorMessage, UserFacingError } from '../../runtime/errors.ts';
import { freePort, isPortAccepting, readTail } from '../../runtime/process-utils.ts';
import { SEARCH_ATTRIBUTES } from '../search-attributes.ts';

export { SEARCH_ATTRIBUTES, ensureSearchAttributes } from '../search-attributes.ts';

/**
 * Dynamic config every dev server gets: task-queue fairness (R8: the sources of a downstream share
 * its task queue by weight, and a per-source rate limit needs it), on the priority matcher that
 * implements it. Server 1.32 has the matcher on by default and fairness off; backlogs written
 * before fairness was on (a `.data/` server of an older `npm start`) drain first
 * (`matching.enableMigration`, on by default). One partition per task queue: fairness is kept per
 * partition, and over the default four a second source's run waited behind up to 50 of another's
 * 172 queued calls (0–5 with one); a single machine needs no more than one.
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, boolean | number | string>> = {
  'matching.useNewMatcher': true,
  'matching.enableFairness': true,
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
};

/** Options for {@link startDevServer}. */
export interface DevServerOptions {
  /** The Temporal CLI binary (see resolveTemporalCli). */
  cliPath: string;
  /** Front-end gRPC port; default 7233; 0 picks a free port. */
  port?: number;
  /** Web UI port; default port + 1000 (a free port when `port` is 0). */
  uiPort?: number;
  /** Run without the Web UI. */
  headless?: boolean;
  /** SQLite file for state that survives restarts; undefined keeps everything in memory. */
  dbFile?: string;
  /** Namespace to create at launch (besides "default") and to check for readiness. */
  namespace?: string;
  /** Server output is appended here; default a temporary file removed by stop(). */
  logFile?: string;
  /** Receives short progress lines. */
  log?: (line: string) => void;
  /** Give up (and kill the server) if not ready within this; default 60000. */
  readyTimeoutMs?: number;
  /** Dynamic config values (`--dynamic-config-value`); default {@link DEV_SERVER_DYNAMIC_CONFIG}. */
  dynamicConfig?: Readonly<Record<string, boolean | number | string>>;
}

/** A running dev server. */
export interface DevServer {
  /** `127.0.0.1:<port>` for Connection/NativeConnection. */
  address: string;
  /** Web UI URL unless headless. */
  uiUrl?: string;
  pid: number;
  /** SIGTERM, then SIGKILL after 10 s; resolves once the process is gone. Idempotent. */
  stop(): Promise<void>;
}

const STOP_GRACE_MS = 10_000;

/**
 * Starts `temporal server start-dev` bound to 127.0.0.1 and resolves once a client can describe the
 * namespace and list all {@link SEARCH_ATTRIBUTES} on it.
 *
 * Side effects: spawns a child process (killed with SIGKILL if this process exits without calling
 * stop()), writes the log file, creates `dbFile`'s directory. The child keeps the event loop alive
 * until stop(). Throws `UserFacingError` code `TEMPORAL_DEV_SERVER_FAILED` when a port is already
 * taken (checked before spawning), or — with the last log lines — when the process cannot start,
 * exits early or is not ready in time; the process is gone by then.
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const log = options.log ?? (() => {});
  const started = Date.now();
  const port = options.port === 0 ? await freePort() : (options.port ?? 7233);
  const uiPort = options.uiPort ?? (options.port === 0 && !options.headless ? await freePort() : port + 1000);
  const namespace = options.namespace ?? 'default';
  const address = `127.0.0.1:${port}`;

  for (const taken of options.headless ? [port] : [port, uiPort]) {
    if (await isPortAccepting(taken)) {
      // Checked up front: the readiness probe would otherwise happily talk to the other server.
      throw new UserFacingError(
        `Cannot start the Temporal dev server: port ${taken} on 127.0.0.1 is already in use ` +
          '(another Temporal server?). Stop it, choose other ports, or point TEMPORAL_ADDRESS at it.',
        'TEMPORAL_DEV_SERVER_FAILED',
      );
    }
  }

  const tempDir = options.logFile ? undefined : mkdtempSync(path.join(os.tmpdir(), 'temporal-dev-server-'));
  const logFile = options.logFile ?? path.join(tempDir!, 'server.log');
  mkdirSync(path.dirname(logFile), { recursive: true });
  if (options.dbFile) mkdirSync(path.dirname(options.dbFile), { recursive: true });

  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port)];
  args.push(
    ...(options.headless ? ['--headless'] : ['--ui-port', String(uiPort), '--ui-disable-news-fetch']),
  );
  args.push('--log-level', 'warn');
  if (options.dbFile) args.push('--db-filename', options.dbFile);
  if (namespace !== 'default') args.push('--namespace', namespace);
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES))
    args.push('--search-attribute', `${name}=${type}`);
  // Values are JSON: strings quoted, booleans and numbers as they are.
  for (const [key, value] of Object.entries(options.dynamicConfig ?? DEV_SERVER_DYNAMIC_CONFIG))
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);

  const logFd = openSync(logFile, 'a');
  const child = spawn(options.cliPath, args, { stdio: ['ignore', logFd, logFd] });
  closeSync(logFd); // the child has its own copy; no pipe ties our event loop to it
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);

  let exitInfo: string | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('error', (error) => {
      exitInfo ??= `could not be started: ${errorMessage(error)}`;
      resolve();
    });
    child.once('exit', (code, signal) => {
      exitInfo ??= signal ? `was killed by ${signal}` : `exited with code ${code ?? '?'}`;
      resolve();
    });
  });

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (exitInfo === undefined) {
        child.kill('SIGTERM');
        const timer = new AbortController();
        const graceful = await Promise.race([
          exited.then(() => true),
          sleep(STOP_GRACE_MS, false, { signal: timer.signal }).catch(() => true),
        ]);
        timer.abort();
        if (!graceful) {
          child.kill('SIGKILL');
          await exited;
        }
      }
      process.removeListener('exit', killOnExit);
      if (tempDir) rmSync(tempDir, { recursive: true, force: true });
    })());

  const failure = async (what: string) => {
    const excerpt = devServerLogExcerpt(await readTail(logFile, 400));
    await stop();
    const portHint = /address already in use/i.test(excerpt.lines)
      ? ` Port ${port} (or ${uiPort}) is already in use.`
      : '';
    const crash = excerpt.crash ? ` It crashed: ${excerpt.crash}` : '';
    return new UserFacingError(
      `Temporal dev server (${options.cliPath}) ${what}.${portHint}${crash}\n${excerpt.heading}${options.logFile ? ` (${logFile})` : ''}:\n${excerpt.lines || '(empty)'}`,
      'TEMPORAL_DEV_SERVER_FAILED',
    );
  };

  const deadline = started + (options.readyTimeoutMs ?? 60_000);
  const connection = Connection.lazy({ address });
  const whileAlive = <T>(promise: Promise<T>) => Promise.race([promise, exited.then(() => undefined)]);
  let lastReason = 'not listening yet';
  try {
    for (;;) {
      if (exitInfo !== undefined) throw await failure(`${exitInfo} during startup`);
      const remaining = deadline - Date.now();
      if (remaining <= 0)
        throw await failure(`was not ready after ${Date.now() - started} ms (${lastReason})`);
      // A cheap TCP check first: the client retries UNAVAILABLE internally, so an RPC to a port
      // nobody listens on takes seconds to fail.
      if (await whileAlive(isPortAccepting(port, '127.0.0.1', Math.min(remaining, 500)))) {
        const probe = connection
          .withDeadline(Date.now() + Math.min(remaining, 5_000), () =>
            missingSearchAttributes(connection, namespace),
          )
          .catch((error: unknown) => {
            lastReason = errorMessage(error);
            return undefined;
          });
        const missing = await whileAlive(probe);
        if (missing?.length === 0) break;
        if (missing) lastReason = `search attributes not visible yet: ${missing.join(', ')}`;
      }
      await whileAlive(sleep(Math.min(100, Math.max(0, deadline - Date.now()))));
    }
  } finally {
    await connection.close();
  }

  child.once('exit', () => {
    if (!stopping)
      log(`Temporal dev server (pid ${child.pid}) ${exitInfo ?? 'exited'} unexpectedly; log: ${logFile}`);
  });
  const uiUrl = options.headless ? undefined : `http://127.0.0.1:${uiPort}`;
  log(
    `Temporal dev server ready at ${address}${uiUrl ? ` (UI ${uiUrl})` : ''} in ${Date.now() - started} ms`,
  );
  return { address, ...(uiUrl ? { uiUrl } : {}), pid: child.pid!, stop };
}

const LOG_TAIL_LINES = 15;
const LINES_BEFORE_CRASH = 4;
const CRASH_LINES = 8;

/**
 * What of a failed server's log to show. A Go crash (`panic:` or `fatal error:`) prints its cause
 * first and then a stack trace of dozens of lines, so the log's last lines are only the bottom of
 * that trace (the command-line parser, `main`): then the lines just before the crash, its message
 * and its first frames are shown instead. Otherwise the last lines. `lines` is the log's non-empty
 * lines, oldest first.
 */
function devServerLogExcerpt(lines: string): { heading: string; lines: string; crash?: string } {
  const all = lines.split('\n');
  // The last one: a log file kept across starts may hold an earlier start's crash too.
  const at = all.findLastIndex((line) => /^(panic|fatal error): /.test(line));
  if (at < 0) return { heading: 'Last lines of its log', lines: all.slice(-LOG_TAIL_LINES).join('\n') };
  const shown = all.slice(Math.max(0, at - LINES_BEFORE_CRASH), at + CRASH_LINES);
  if (at + CRASH_LINES < all.length) shown.push(`… (${all.length - at - CRASH_LINES} more lines)`);
  return { heading: 'Its log around the crash', lines: shown.join('\n'), crash: all[at] };
}

/** Describes the namespace (throws until it exists) and lists which search attributes are missing. */
async function missingSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  await connection.workflowService.describeNamespace({ namespace });
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  return Object.keys(SEARCH_ATTRIBUTES).filter((name) => !(name in (customAttributes ?? {})));
}
