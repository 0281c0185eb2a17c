/**
 * Which database errors are an outage (retry: `DatabaseUnavailable`) and which are facts about the
 * statement or the data (a bug: `Internal`). Decided by SQLSTATE class, PostgreSQL's severity and
 * the driver's error kind — never by message text, never by an allow-list of a few exact codes: a
 * failover, a maintenance window or a restart reaches the client under many codes.
 */
import { DriverStatementError } from '../db/driver-error.ts';

/**
 * SQLSTATE classes (the first two characters) that say the database, not the statement, is the
 * problem right now, whatever the exact code:
 * - `08` connection exception: lost, refused or failed connections;
 * - `40` transaction rollback: serialization failure, deadlock, statement completion unknown;
 * - `53` insufficient resources: too many connections, out of memory or disk;
 * - `55` object not in prerequisite state: a database not accepting connections (`55000`, what
 *   `ALLOW_CONNECTIONS false` during maintenance or a failover looks like), a lock not granted
 *   within `lock_timeout` (`55P03`);
 * - `57` operator intervention: admin or crash shutdown, "cannot connect now" while starting or in
 *   recovery, a statement cancelled by `statement_timeout`;
 * - `58` system error: the server's own I/O failing.
 */
const TRANSIENT_SQLSTATE_CLASSES: ReadonlySet<string> = new Set(['08', '40', '53', '55', '57', '58']);

/**
 * Single codes outside those classes that mean the same: a write that reached a read-only server
 * (a standby, or a primary being demoted during a failover), and a session ended by
 * `idle_in_transaction_session_timeout`.
 */
const TRANSIENT_SQLSTATES: ReadonlySet<string> = new Set(['25006', '25P03']);

/**
 * Classes whose errors are configuration, not an outage, even when PostgreSQL ends the session
 * with them (FATAL): invalid authorization, and a database that does not exist. No retry mends them.
 */
const CONFIGURATION_SQLSTATE_CLASSES: ReadonlySet<string> = new Set(['28', '3D']);

/**
 * Prisma's own codes and its driver adapter's error kinds for the same situations: the server not
 * reachable, a closed or timed-out connection, the pool or a transaction start timing out, a write
 * conflict.
 */
const TRANSIENT_DRIVER_CODES: ReadonlySet<string> = new Set([
  'P1001',
  'P1002',
  'P1008',
  'P1017',
  'P2024',
  'P2028',
  'P2034',
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TransactionWriteConflict',
  'TlsConnectionError',
]);

/** Socket-level codes: from a database connection they mean the database is out of reach. */
const SOCKET_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

interface DriverCause {
  originalCode?: unknown;
  code?: unknown;
  kind?: unknown;
  severity?: unknown;
}

interface Coded {
  code?: unknown;
  cause?: unknown;
  severity?: unknown;
  clientVersion?: unknown;
  meta?: { driverAdapterError?: { cause?: DriverCause } };
}

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** Walks an error and its causes (bounded), most specific layer first. */
function* layers(err: unknown): Generator<Coded> {
  for (let e: unknown = err, depth = 0; typeof e === 'object' && e !== null && depth < 5; depth++) {
    yield e;
    e = (e as Coded).cause;
  }
}

/**
 * Every error code in `err`, most specific first: PostgreSQL's SQLSTATE that Prisma 7's driver
 * adapter keeps under `meta.driverAdapterError.cause` (e.g. 57P01 behind a generic P2010), the
 * adapter's error kind (e.g. DatabaseNotReachable, which has no SQLSTATE), the error's own
 * `code`, then its causes'. Classification looks at all of them: the first is not always the one
 * that decides (40001 behind P2034).
 */
export function codesOf(err: unknown): string[] {
  const codes: string[] = [];
  for (const c of layers(err)) {
    const driver = c.meta?.driverAdapterError?.cause;
    for (const candidate of [driver?.originalCode, driver?.code, driver?.kind, c.code]) {
      if (typeof candidate === 'string' && !codes.includes(candidate)) codes.push(candidate);
    }
  }
  return codes;
}

/** The most specific error code in `err` (see {@link codesOf}). */
export function codeOf(err: unknown): string | undefined {
  return codesOf(err)[0];
}

/**
 * True when `err` came from the database client: a Prisma error (it carries the client version),
 * a statement the engine sent through the driver on a transaction's connection, or a node-postgres
 * server error (a severity and a SQLSTATE).
 */
function fromDatabase(err: unknown): boolean {
  for (const c of layers(err)) {
    if (typeof c.clientVersion === 'string' || c instanceof DriverStatementError) return true;
    if (typeof c.severity === 'string' && typeof c.code === 'string' && SQLSTATE.test(c.code)) return true;
  }
  return false;
}

/** PostgreSQL ended the session (FATAL or PANIC), as reported by the server or Prisma's adapter. */
function sessionEnded(err: unknown): boolean {
  for (const c of layers(err)) {
    const severity = c.meta?.driverAdapterError?.cause?.severity ?? c.severity;
    if (severity === 'FATAL' || severity === 'PANIC') return true;
  }
  return false;
}

/** A PostgreSQL SQLSTATE (not one of Prisma's own P1xxx–P6xxx codes, nor an errno such as EPIPE). */
const isSqlState = (c: string) => /^([0-9][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}$/.test(c);

/**
 * The code to report when `err` is the database being unavailable (an outage to wait out), or
 * undefined when it is not. A database error is an outage when any of its codes is in a
 * transient SQLSTATE class or is a transient driver code; when PostgreSQL ended the session
 * (severity FATAL/PANIC) for anything but a configuration error; when it is a socket error on the
 * database connection; or when Prisma or the driver failed without any data-level code (the
 * connection layer failing in a way it did not label). Codes alone decide for errors of unknown origin.
 */
export function databaseOutageCode(err: unknown): string | undefined {
  const codes = codesOf(err);
  const transient = codes.find(
    (c) =>
      TRANSIENT_DRIVER_CODES.has(c) ||
      TRANSIENT_SQLSTATES.has(c) ||
      (isSqlState(c) && TRANSIENT_SQLSTATE_CLASSES.has(c.slice(0, 2))),
  );
  if (transient) return transient;
  if (!fromDatabase(err)) return undefined;
  const sqlStates = codes.filter(isSqlState);
  if (sessionEnded(err) && !sqlStates.some((c) => CONFIGURATION_SQLSTATE_CLASSES.has(c.slice(0, 2)))) {
    return sqlStates[0] ?? codes[0] ?? 'SESSION_ENDED';
  }
  const socket = codes.find((c) => SOCKET_CODES.has(c));
  if (socket) return socket;
  if (!codes.some((c) => /^P2\d{3}$/.test(c) || isSqlState(c))) {
    return (
      codes[0] ??
      ([...layers(err)].some((c) => c instanceof DriverStatementError) ? 'DRIVER_UNKNOWN' : 'PRISMA_UNKNOWN')
    );
  }
  return undefined;
}
