/**
 * A throw-away PostgreSQL 15 cluster that accepts TLS connections only: `ssl = on` with a server
 * certificate signed by a CA made for the test (openssl), and a pg_hba.conf of `hostssl` lines
 * alone, so a connection without TLS is refused by the server itself. A second CA, which signed
 * nothing of the server's, stands for a wrong `sslrootcert`. Everything lives in a temp dir,
 * owned by the OS user `postgres` when the test runs as root (PostgreSQL refuses to run as root).
 */
import { execFile } from 'node:child_process';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../runtime/process-utils.ts';

const run = promisify(execFile);
const PG_BIN = '/usr/lib/postgresql/15/bin';

export interface TlsPostgres {
  /** `postgresql://postgres@127.0.0.1:<port>/<db>` with no TLS parameter: add `?sslmode=…`. */
  urlFor(database: string): string;
  port: number;
  /** The CA that signed the server's certificate (PEM file). */
  caFile: string;
  /** A CA that signed nothing of the server's (PEM file). */
  wrongCaFile: string;
  stop(): Promise<void>;
}

/** The uid and gid of the OS user `postgres`, when this process is root (it must not run the server). */
async function postgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const [{ stdout: uid }, { stdout: gid }] = await Promise.all([
    run('id', ['-u', 'postgres']),
    run('id', ['-g', 'postgres']),
  ]);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

/** `file args` as `owner` (through runuser when root). */
function runAs(owner: { uid: number; gid: number } | undefined, file: string, args: string[]) {
  return owner ? run('runuser', ['-u', 'postgres', '--', file, ...args]) : run(file, args);
}

/** A CA key and self-signed certificate, `<name>.key` / `<name>.crt` in `dir`. */
async function makeCa(dir: string, name: string): Promise<string> {
  const key = path.join(dir, `${name}.key`);
  const crt = path.join(dir, `${name}.crt`);
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    key,
    '-out',
    crt,
  ]);
  return crt;
}

/**
 * Starts the cluster on a free loopback port and creates nothing but the default databases.
 * Stop it with `stop()` (fast shutdown, temp dir removed).
 */
export async function startTlsPostgres(): Promise<TlsPostgres> {
  const dir = await mkdtemp(path.join(tmpdir(), 'df-tls-pg-'));
  const data = path.join(dir, 'data');
  const caFile = await makeCa(dir, 'test-ca');
  const wrongCaFile = await makeCa(dir, 'other-ca');
  const serverKey = path.join(dir, 'server.key');
  const serverCsr = path.join(dir, 'server.csr');
  const serverCrt = path.join(dir, 'server.crt');
  const ext = path.join(dir, 'server.ext');
  await writeFile(ext, 'subjectAltName = IP:127.0.0.1, DNS:localhost\n');
  await run('openssl', [
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    serverKey,
    '-out',
    serverCsr,
  ]);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    serverCsr,
    '-CA',
    caFile,
    '-CAkey',
    path.join(dir, 'test-ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    ext,
    '-out',
    serverCrt,
  ]);
  const owner = await postgresUser();
  // The server's key must be private to the user that runs the server, or PostgreSQL refuses it.
  await chmod(serverKey, 0o600);
  await chmod(dir, 0o755);
  if (owner) {
    await chown(dir, owner.uid, owner.gid);
    await chown(serverKey, owner.uid, owner.gid);
    await chown(serverCrt, owner.uid, owner.gid);
  }
  await runAs(owner, path.join(PG_BIN, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync']);
  const port = await freePort();
  await writeFile(
    path.join(data, 'pg_hba.conf'),
    [
      '# TLS only: a plain connection matches no line and is refused.',
      'hostssl all all 127.0.0.1/32 trust',
      '',
    ].join('\n'),
  );
  const conf = [
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    "unix_socket_directories = ''",
    'ssl = on',
    `ssl_cert_file = '${serverCrt}'`,
    `ssl_key_file = '${serverKey}'`,
    'fsync = off',
    '',
  ].join('\n');
  await writeFile(path.join(data, 'postgresql.auto.conf'), conf);
  if (owner) await run('chown', ['-R', `${owner.uid}:${owner.gid}`, data]);
  await runAs(owner, path.join(PG_BIN, 'pg_ctl'), [
    '-D',
    data,
    '-l',
    path.join(dir, 'server.log'),
    '-w',
    'start',
  ]);
  return {
    port,
    caFile,
    wrongCaFile,
    urlFor: (database) => `postgresql://postgres@127.0.0.1:${port}/${database}`,
    stop: async () => {
      await runAs(owner, path.join(PG_BIN, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']).catch(
        () => undefined,
      );
      await rm(dir, { recursive: true, force: true });
    },
  };
}
