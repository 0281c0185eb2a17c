/**
 * The node-postgres settings every connection of the app is opened with, kept apart from the
 * Prisma client (db/client.ts) so that a command reading through plain `pg` (db/pg-reader.ts)
 * shares them without loading the Prisma runtime.
 */
import type * as Pg from 'pg';
import { ENGINE_SCHEMA } from '../contract/engine-schema.ts';
import { type Pooling, tlsConnection } from './connection.ts';
import { SESSION_BOUNDS } from './limits.ts';

export { ENGINE_SCHEMA };

/**
 * The `search_path` of every engine connection: the engine's own schema first, so that its
 * statements name its tables unqualified, then `public`, where an application keeps its own
 * tables by default (a job's `storePage` writes them in the same transaction). The engine's
 * tables live apart from the application's so that the application's own migrations (Prisma
 * Migrate on its own schema) never see them, nor offer to drop them as drift.
 */
export const ENGINE_SEARCH_PATH = `${ENGINE_SCHEMA},public`;

/**
 * The startup `options` that give a connection the engine's search_path, added to any `options`
 * the connection string already carries (libpq's `?options=`), which otherwise still apply.
 */
export function engineSessionOptions(connectionString: string): string {
  let given = '';
  try {
    given = new URL(connectionString).searchParams.get('options') ?? '';
  } catch {
    // Not a URL (a libpq keyword string): node-postgres reports it when it connects.
  }
  return [given, `-c search_path=${ENGINE_SEARCH_PATH}`].filter(Boolean).join(' ');
}

/**
 * A plain node-postgres connection's settings on `connectionString` (its TLS settings read as
 * libpq reads them: db/connection.ts), in the engine's schema. Behind a transaction pooler no
 * start-up `options` are sent: PgBouncer refuses them, or drops them when told to ignore them, and
 * a session setting would not outlive the transaction anyway; the search_path then comes from the
 * role (docs/database.md), which the first check of a process verifies.
 */
export function engineConnection(connectionString: string, pooling: Pooling = 'session') {
  const tls = tlsConnection(connectionString);
  return pooling === 'transaction' ? tls : { ...tls, options: engineSessionOptions(connectionString) };
}

/**
 * How long opening a connection, or waiting for a free one in the pool, may take before the query
 * fails (retried as DatabaseUnavailable): an unreachable database fails fast, inside the 10 s
 * attempt, instead of hanging until Temporal times the activity out.
 */
export const CONNECT_TIMEOUT_MS = 5_000;

/**
 * How long a statement of a long-running process may go unanswered before node-postgres fails it
 * (retried as DatabaseUnavailable, and its connection closed, not reused). A server that stops
 * answering — a network partition, a failover behind a stale address — resets nothing and refuses
 * nothing: without this a statement waits as long as the partition lasts, holding its pool
 * connection and its worker slot. The server's own `statement_timeout` cannot help: it never hears
 * of the wait. Longer than any engine statement runs (a page's transaction is bounded to 8 s, a
 * local step's attempt to 10 s), and than `lock_timeout`.
 */
export const STATEMENT_TIMEOUT_MS = 15_000;

/** Connections of a CLI command: one query at a time, plus headroom for a transaction. */
export const CLI_POOL_SIZE = 4;

export interface PoolOptions {
  /** Connections in the pool. Default 10. */
  max?: number;
  /**
   * Sessions get {@link SESSION_BOUNDS} (long-running processes). Default false (CLI commands).
   * Behind a transaction pooler, each transaction gets them instead ({@link transactionSettings}).
   */
  bounded?: boolean;
  /** What is between the process and PostgreSQL (db/connection.ts). Default `session`. */
  pooling?: Pooling;
}

// Long-running processes size their pools from what they run at once: worker/pool-size.ts.

/**
 * The downstream pollers' slots, every downstream's `max_concurrent_calls` summed, read on
 * `client`: a plain connection, since the pool they size is not open yet. Read-only.
 */
export async function readDownstreamSlots(client: Pick<Pg.ClientBase, 'query'>): Promise<number> {
  const { rows } = await client.query<{ slots: number }>(
    'SELECT COALESCE(sum(max_concurrent_calls), 0)::int AS slots FROM downstream',
  );
  return rows[0]?.slots ?? 0;
}

/** The driver settings of a pool: exported so a test can check what a process would open. */
export function poolConfig(connectionString: string, options: PoolOptions = {}) {
  const pooling = options.pooling ?? 'session';
  return {
    ...engineConnection(connectionString, pooling),
    max: options.max ?? 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    ...(options.bounded ? { query_timeout: STATEMENT_TIMEOUT_MS } : {}),
    // Start-up parameters, which a transaction pooler refuses: there each transaction sets them.
    ...(options.bounded && pooling === 'session'
      ? {
          lock_timeout: SESSION_BOUNDS.lockTimeoutMs,
          idle_in_transaction_session_timeout: SESSION_BOUNDS.idleInTransactionTimeoutMs,
        }
      : {}),
  };
}

/**
 * The statement each transaction of a bounded pool sends first behind a transaction pooler: the
 * {@link SESSION_BOUNDS} for this transaction only (`set_config(…, true)` is `SET LOCAL`), since
 * the next transaction of the same client may run on another server session. One round trip per
 * transaction, in that mode only; undefined when the session's start-up parameters carry them.
 */
export function transactionSettings(options: PoolOptions): string | undefined {
  if (!options.bounded || options.pooling !== 'transaction') return undefined;
  return (
    `SELECT set_config('lock_timeout', '${SESSION_BOUNDS.lockTimeoutMs}ms', true), ` +
    `set_config('idle_in_transaction_session_timeout', '${SESSION_BOUNDS.idleInTransactionTimeoutMs}ms', true)`
  );
}
