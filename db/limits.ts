/**
 * Bounds the data-access layer holds every writer to: how long a session may wait for a lock or
 * sit idle in a transaction, and how much error text a row keeps.
 */

/**
 * Server-side bounds of every session a worker or publisher opens (start-up parameters, so they
 * hold for every statement and transaction of the session), chosen against the `database` retry
 * preset's 10 s start-to-close (contract/retry-presets.ts). The one place for such settings:
 * db/client.ts opens pools with them, and the outbox claim sets the same lock timeout for its
 * statement (db/outbox/outbox.ts), for pools that were opened without them.
 */
export const SESSION_BOUNDS = {
  /**
   * A statement waiting for a lock (a `fetch_run` row held by another attempt of the same run)
   * gives up after 5 s with SQLSTATE 55P03, which is retried as DatabaseUnavailable: half the
   * attempt's 10 s, so the waiter fails inside its own attempt and retries with backoff, instead
   * of timing out while its zombie still queues behind the lock.
   */
  lockTimeoutMs: 5_000,
  /**
   * The server ends a session left idle inside an open transaction for 10 s (SQLSTATE 25P03),
   * which rolls it back and releases its row locks. A live `storePage` is never idle that long
   * between its statements (its whole transaction is bounded to 8 s); a worker frozen inside one
   * (a stopped process, a paused VM, a partition) is past its 10 s attempt by then, and Temporal
   * has handed the page to another worker, which must be able to lock the run's row.
   */
  idleInTransactionTimeoutMs: 10_000,
} as const;

/** Longest error message kept on a row (a run, a dead letter, a ledger row): enough to read, never a dumped body. */
export const MAX_KEPT_MESSAGE = 500;
