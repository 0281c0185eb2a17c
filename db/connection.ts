/**
 * How every PostgreSQL connection of the app is opened from a connection URL, and what it is told
 * when one cannot be: the TLS settings of libpq's `sslmode` and the pooling mode in front of the
 * server. Every place that opens a connection (the Prisma client's pool, the CLI's plain reader,
 * the migrator, the start-up waits) goes through {@link tlsConnection}, so that one URL means the
 * same thing to each of them.
 *
 * Why not node-postgres's own reading of `sslmode`: the pinned pg-connection-string (2.14) treats
 * `require` and `verify-ca` as `verify-full` — `sslmode=require` against a managed PostgreSQL with
 * a private CA fails with "unable to verify the first certificate" — and prints a multi-line
 * SECURITY WARNING on stderr for them. libpq's meaning is what every other client of the same URL
 * (psql, Prisma's schema engine, pg_dump) applies, and what managed providers document.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { UserFacingError } from '../runtime/errors.ts';

/** libpq's `sslmode` values the app accepts (`allow` and `prefer` are refused: see {@link tlsConnection}). */
export type SslMode = 'disable' | 'require' | 'verify-ca' | 'verify-full';

/**
 * How connections reach PostgreSQL. `session`: directly, or through a pooler that gives each
 * client connection one server session for its life (PgBouncer `pool_mode = session`).
 * `transaction`: through a pooler that hands a server session out per transaction (PgBouncer
 * `pool_mode = transaction`): nothing may be kept in the session between transactions.
 */
export type Pooling = 'session' | 'transaction';

/** The URL parameters that are TLS settings: read here, and never passed on to node-postgres. */
const TLS_PARAMS = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'uselibpqcompat', 'ssl'];

/** A connection string without its TLS parameters, and node-postgres's `ssl` option for them. */
export interface TlsConnection {
  connectionString: string;
  /** Absent when the URL names no `sslmode`: node-postgres's defaults apply (no TLS). */
  ssl?: false | ConnectionOptions;
}

function readPem(path: string, param: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new UserFacingError(
      `cannot read ${param}=${path} named in DATABASE_URL (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`,
      'DB_TLS_SETTING',
    );
  }
}

/**
 * `url` as node-postgres should open it, with libpq's TLS semantics:
 * - `disable`: no TLS;
 * - `require`: TLS, the server's certificate not checked (as libpq, with `sslrootcert` given it is
 *   checked against that CA, like `verify-ca`);
 * - `verify-ca`: TLS, the certificate must chain to `sslrootcert` (required), any host name;
 * - `verify-full`: TLS, the certificate must chain to `sslrootcert` (or, without it or with
 *   `sslrootcert=system`, to Node's trusted CAs) and name the host connected to.
 * `sslcert`/`sslkey` give a client certificate. `allow` and `prefer` are refused: node-postgres
 * cannot fall back between TLS and plain connections as libpq does, and silently choosing one
 * would either fail against a server libpq reaches or send in clear what libpq would encrypt.
 * A URL without `sslmode` is passed on as it is. Pure but for reading the named PEM files.
 * @throws UserFacingError (code DB_TLS_SETTING) naming the setting that is wrong.
 */
export function tlsConnection(url: string): TlsConnection {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL (a libpq keyword string): node-postgres reports it when it connects.
    return { connectionString: url };
  }
  const params = parsed.searchParams;
  const mode = params.get('sslmode');
  if (mode === null) return { connectionString: url };
  const rootcert = params.get('sslrootcert');
  const cert = params.get('sslcert');
  const key = params.get('sslkey');
  for (const name of TLS_PARAMS) params.delete(name);
  const connectionString = parsed.toString();
  const client: ConnectionOptions = {
    ...(cert ? { cert: readPem(cert, 'sslcert') } : {}),
    ...(key ? { key: readPem(key, 'sslkey') } : {}),
  };
  const ca = rootcert && rootcert !== 'system' ? { ca: readPem(rootcert, 'sslrootcert') } : {};
  const anyHost = { checkServerIdentity: () => undefined };
  switch (mode) {
    case 'disable':
      return { connectionString, ssl: false };
    case 'require':
      return {
        connectionString,
        ssl: rootcert ? { ...client, ...ca, ...anyHost } : { ...client, rejectUnauthorized: false },
      };
    case 'verify-ca':
      if (!rootcert || rootcert === 'system') {
        throw new UserFacingError(
          'DATABASE_URL has sslmode=verify-ca without sslrootcert: name the CA file that signed the server certificate (sslrootcert=/path/ca.pem), or use sslmode=verify-full',
          'DB_TLS_SETTING',
        );
      }
      return { connectionString, ssl: { ...client, ...ca, ...anyHost } };
    case 'verify-full':
      return { connectionString, ssl: { ...client, ...ca } };
    default:
      throw new UserFacingError(
        `DATABASE_URL has sslmode=${mode}, which is not supported: use disable, require, verify-ca or verify-full (allow and prefer, which fall back between TLS and plain connections, are not)`,
        'DB_TLS_SETTING',
      );
  }
}

/** The TLS mode `url` asks for, as {@link tlsConnection} reads it; undefined when it names none. */
function sslModeOf(url: string): string | undefined {
  try {
    return new URL(url).searchParams.get('sslmode') ?? undefined;
  } catch {
    return undefined;
  }
}

interface Layer {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  meta?: {
    driverAdapterError?: {
      cause?: { originalCode?: unknown; originalMessage?: unknown; kind?: unknown; reason?: unknown };
    };
  };
}

/** An error and its causes (bounded), most specific layer first. */
function* layers(err: unknown): Generator<Layer> {
  for (let e: unknown = err, depth = 0; typeof e === 'object' && e !== null && depth < 6; depth++) {
    yield e;
    e = (e as Layer).cause;
  }
}

/** Node's codes of a server certificate that does not check out against the trusted CAs or the host. */
const CERTIFICATE_REFUSED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * One line that says why a connection to `url` could not be opened, naming the setting to check,
 * when `err` is a TLS or pooling problem the user can fix by configuration; undefined for anything
 * else (an unreachable host, a missing database…), which its caller reports as it already does.
 * Decided by codes — Node's TLS codes, PostgreSQL's SQLSTATE — and by what `url` asked for, never
 * by message text; the message quoted is the server's or Node's own, with no password in it.
 */
export function connectionProblem(
  err: unknown,
  url: string,
  pooling: Pooling = 'session',
): string | undefined {
  const mode = sslModeOf(url);
  for (const layer of layers(err)) {
    const driver = layer.meta?.driverAdapterError?.cause;
    const code = typeof driver?.originalCode === 'string' ? driver.originalCode : layer.code;
    const text = [driver?.originalMessage, driver?.reason, layer.message].find((m) => typeof m === 'string');
    const message = typeof text === 'string' ? text : '';
    // Prisma's adapter reports any TLS failure of node-postgres as this kind, Node's code dropped.
    if (
      driver?.kind === 'TlsConnectionError' ||
      (typeof code === 'string' && CERTIFICATE_REFUSED.has(code))
    ) {
      return `TLS with the server failed (${message}; sslmode=${mode ?? 'unset'}): check sslmode and sslrootcert in DATABASE_URL (sslrootcert: the CA that signed the server's certificate; verify-full also checks the host name)`;
    }
    if (typeof code !== 'string') continue;
    // invalid_authorization_specification on a connection sent without TLS: what a server that
    // takes TLS connections only (pg_hba.conf `hostssl`) answers.
    if (code === '28000' && (mode === undefined || mode === 'disable')) {
      return `the server refused a connection without TLS (${message}): set sslmode=require or verify-full in DATABASE_URL`;
    }
    // protocol_violation before any statement: a pooler that refuses a start-up parameter (PgBouncer
    // refuses `options` and the session bounds unless told to ignore them, and then loses them).
    if (code === '08P01' && pooling === 'session') {
      return `the server refused the connection's start-up parameters (${message}): behind PgBouncer (which refuses them in every pool mode) set DURABLE_FETCH_DB_POOLING=transaction (docs/database.md)`;
    }
  }
  return undefined;
}
