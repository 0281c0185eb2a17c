/**
 * Debian's PgBouncer, started by a test in front of a PostgreSQL server, on a free loopback port
 * of its own, with its config, auth file, log and pid file in a temp dir. Installed by
 * scripts/pgbouncer.ts when missing. PgBouncer refuses to run as root: as root it is started with
 * `-u postgres`, and its files are that user's.
 */
import { execFile } from 'node:child_process';
import { chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../runtime/process-utils.ts';
import { resolvePgbouncer } from '../../scripts/pgbouncer.ts';
import { spawnProgram, type Spawned } from './process.ts';

const run = promisify(execFile);

export interface PgBouncer {
  port: number;
  /** `url` (a database on the server behind it) with PgBouncer's host and port instead. */
  via(url: string): string;
  /** PgBouncer's own log, for assertion messages. */
  log(): Promise<string>;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  /** `server`'s host and port: PgBouncer's every database points there. */
  server: { host: string; port: number };
  /** PgBouncer's `pool_mode`. */
  poolMode: 'session' | 'transaction' | 'statement';
  /** Server connections per user and database: few, so that clients really share them. */
  defaultPoolSize: number;
  /** The roles allowed in (auth_type trust: no password checked, but the name must be listed). */
  users: string[];
}

/** Starts PgBouncer; resolves once it accepts connections (its log says so). */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  const binary = await resolvePgbouncer({ log: (line) => console.error(`[pgbouncer] ${line}`) });
  const dir = await mkdtemp(path.join(tmpdir(), 'df-pgbouncer-'));
  const port = await freePort();
  const ini = path.join(dir, 'pgbouncer.ini');
  const users = path.join(dir, 'userlist.txt');
  const logFile = path.join(dir, 'pgbouncer.log');
  await writeFile(users, options.users.map((u) => `"${u}" ""`).join('\n') + '\n');
  await writeFile(
    ini,
    [
      '[databases]',
      `* = host=${options.server.host} port=${options.server.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${users}`,
      `pool_mode = ${options.poolMode}`,
      `default_pool_size = ${options.defaultPoolSize}`,
      'max_client_conn = 500',
      `logfile = ${logFile}`,
      `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const [{ stdout: uid }, { stdout: gid }] = await Promise.all([
      run('id', ['-u', 'postgres']),
      run('id', ['-g', 'postgres']),
    ]);
    for (const file of [dir, ini, users]) await chown(file, Number(uid), Number(gid));
  }
  const child: Spawned = spawnProgram(binary, [...(asRoot ? ['-u', 'postgres'] : []), ini], {
    PATH: process.env.PATH ?? '',
  });
  const log = () => readFile(logFile, 'utf8').catch(() => '');
  // Its log, not stdout, says when it listens; poll it, bounded.
  for (let i = 0; ; i++) {
    if (/listening on 127\.0\.0\.1:\d+/.test(await log())) break;
    if (child.child.exitCode !== null || i >= 200) {
      await rm(dir, { recursive: true, force: true });
      throw new Error(`pgbouncer did not start:\n${child.output()}\n${await log()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    via(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    log,
    stop: async () => {
      await child.stop('SIGTERM', 5_000).catch(() => child.stop('SIGKILL', 5_000));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
