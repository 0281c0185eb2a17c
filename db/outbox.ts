/**
 * `outbox_event` (R5, R1): events written inside the transaction of the change they announce,
 * and the publisher's statements — claim a batch under a lease, mark published or failed only
 * while the claim is still ours, release. Operators' statements are in outbox-admin.ts.
 *
 * Claims are leases, never open transactions: a claim stamps `claim_token` and `claimed_until`
 * (the database's clock) and commits; delivery happens afterwards; every later write of the row
 * checks the token. A publisher that stalls past its lease loses the row to the next claimer, and
 * its own late write changes nothing (it reports the rejection).
 */
import { Prisma, type PrismaClient } from '../prisma/generated/client.ts';
import { SESSION_BOUNDS } from './limits.ts';

type Db = Pick<PrismaClient, '$queryRaw' | '$executeRaw' | '$transaction'>;

/** One event as written: its id derived by the caller from the step that emits it. */
export interface NewOutboxEvent {
  id: string;
  topic: string;
  /** The aggregate whose events are delivered in order (`fetch_run` and the run's id). */
  aggregateType: string;
  aggregateId: string;
  payload: Prisma.InputJsonObject;
  /** Written and due at once. */
  now: Date;
}

/**
 * The INSERT of `events`, in order (their `seq` follows the list), as one statement to run alone
 * or inside a larger one (a data-modifying CTE). Nothing is inserted for an empty list.
 */
export function insertOutboxEventsSql(events: readonly NewOutboxEvent[]): Prisma.Sql {
  const ids = events.map((e) => e.id);
  const topics = events.map((e) => e.topic);
  const aggregateTypes = events.map((e) => e.aggregateType);
  const aggregateIds = events.map((e) => e.aggregateId);
  const payloads = events.map((e) => JSON.stringify(e.payload));
  const times = events.map((e) => e.now.toISOString());
  return Prisma.sql`
    INSERT INTO outbox_event (id, topic, aggregate_type, aggregate_id, payload, created_at, available_at)
    SELECT e.id, e.topic, e.aggregate_type, e.aggregate_id, e.payload::jsonb, e.at, e.at
      FROM unnest(${ids}::uuid[], ${topics}::text[], ${aggregateTypes}::text[], ${aggregateIds}::text[],
                  ${payloads}::text[], ${times}::timestamptz[])
           WITH ORDINALITY AS e(id, topic, aggregate_type, aggregate_id, payload, at, n)
     ORDER BY e.n`;
}

/**
 * Inserts `events`, in order, in transaction `tx`, next to the business rows they announce. Not
 * idempotent by itself: the caller's idempotency record (or run state) guarantees it runs once
 * per step, and a derived id makes a second insert fail rather than duplicate.
 */
export async function insertOutboxEvents(
  tx: Pick<Prisma.TransactionClient, '$executeRaw'>,
  events: readonly NewOutboxEvent[],
): Promise<void> {
  if (events.length > 0) await tx.$executeRaw(insertOutboxEventsSql(events));
}

/** An event as the publisher delivers it. */
export interface ClaimedEvent {
  id: string;
  /** Insertion order, as a decimal string (a bigint in the table). */
  seq: string;
  topic: string;
  aggregateType: string;
  aggregateId: string;
  payload: unknown;
  /** Failed deliveries before this claim. */
  attempts: number;
  createdAt: Date;
  /** Claimed before by a publisher whose lease ran out (it died or stalled): a takeover. */
  takenOver: boolean;
}

export interface Claim {
  token: string;
  /** Local clock time after which the claim must be treated as lost (lease minus a margin). */
  deadline: number;
  events: ClaimedEvent[];
}

// All claimers take this transaction-scoped advisory lock (database-local), so claims are
// serialised: each claim's snapshot already sees the previous claim. Without it two claimers could
// take the first and second event of one aggregate at the same moment and deliver them in parallel.
const CLAIM_LOCK = 'durable-fetch:outbox-claim';

/**
 * Claims up to `limit` due events in `seq` order and leases them for `leaseMs` under `token`.
 *
 * Per-aggregate order (R5): an event is claimable only when every earlier event of its aggregate
 * is published or claimable right now. With the global `seq` order and LIMIT, a batch therefore
 * holds, for each aggregate, a gap-free prefix of its undelivered events; an event waiting for a
 * retry, claimed by someone else, being written by someone else, or dead holds back the rest of its
 * aggregate only.
 *
 * An expired claim is claimable again; taking it counts a `takeover` on the row (how a publisher
 * that died or stalled after the sink's ack leads to a second delivery).
 */
export async function claimBatch(
  db: Db,
  opts: { token: string; limit: number; leaseMs: number },
): Promise<ClaimedEvent[]> {
  const rows = await db.$transaction(async (tx) => {
    // Plan shape, for this transaction only: walk the pending index in seq order and stop at the
    // batch size. Queue tables' statistics are always stale (rows come and go faster than ANALYZE),
    // and a planner that believes "few pending rows" sorts all of them and checks each one's
    // predecessors: 90 ms instead of 5 ms at a few thousand pending.
    // Bounded waits: a claimer that froze while holding the lock (VM pause, partition) must not
    // stop every other publisher. Waiting claimers give up after lock_timeout and try again; the
    // server ends a holder idle in its transaction, which releases the lock. The same bounds as
    // every worker and publisher session (worker/db.ts), set here too for pools opened without them.
    await tx.$queryRaw`
      SELECT set_config('enable_bitmapscan', 'off', true),
             set_config('lock_timeout', ${`${SESSION_BOUNDS.lockTimeoutMs}ms`}, true),
             set_config('statement_timeout', '10s', true),
             set_config('idle_in_transaction_session_timeout', ${`${SESSION_BOUNDS.idleInTransactionTimeoutMs}ms`}, true)`;
    await tx.$queryRaw`SELECT pg_advisory_xact_lock(hashtext(${CLAIM_LOCK}))::text AS locked`;
    return tx.$queryRaw<ClaimRow[]>`
      WITH locked AS (
        SELECT e.id, e.seq, e.aggregate_type, e.aggregate_id, e.claimed_until IS NOT NULL AS taken_over
          FROM outbox_event e
         WHERE e.status = 'pending' AND e.available_at <= now()
           AND (e.claimed_until IS NULL OR e.claimed_until <= now())
           AND NOT EXISTS (
             SELECT 1 FROM outbox_event p
              WHERE p.aggregate_type = e.aggregate_type AND p.aggregate_id = e.aggregate_id
                AND p.status IN ('pending', 'dead') AND p.seq < e.seq
                AND NOT (p.status = 'pending' AND p.available_at <= now()
                         AND (p.claimed_until IS NULL OR p.claimed_until <= now())))
         ORDER BY e.seq
         LIMIT ${opts.limit}
         FOR UPDATE SKIP LOCKED),
      -- SKIP LOCKED may have passed over an earlier event that another transaction is writing
      -- (e.g. a stale owner's late mark-failed): the snapshot above still calls it claimable.
      -- Keep only events whose undelivered predecessors are all locked here too: as many as this
      -- batch holds before them. Both sides are index-only work per row, whatever the table's size.
      ranked AS (
        SELECT l.id, l.seq, l.aggregate_type, l.aggregate_id, l.taken_over,
               row_number() OVER (PARTITION BY l.aggregate_type, l.aggregate_id ORDER BY l.seq) - 1
                 AS locked_before
          FROM locked l),
      candidate AS (
        SELECT r.id, r.taken_over FROM ranked r
         WHERE r.locked_before = (
           SELECT count(*) FROM outbox_event p
            WHERE p.aggregate_type = r.aggregate_type AND p.aggregate_id = r.aggregate_id
              AND p.status IN ('pending', 'dead') AND p.seq < r.seq))
      UPDATE outbox_event o
         SET claim_token = ${opts.token}::uuid,
             claimed_until = now() + ${opts.leaseMs} * interval '1 millisecond',
             takeovers = o.takeovers + (o.claimed_until IS NOT NULL)::int
        FROM candidate c
       WHERE o.id = c.id
      RETURNING o.id::text AS id, o.seq::text AS seq, o.topic, o.aggregate_type, o.aggregate_id,
                o.payload, o.attempts, o.created_at, c.taken_over`;
  });
  return rows
    .map((r) => ({
      id: r.id,
      seq: r.seq,
      topic: r.topic,
      aggregateType: r.aggregate_type,
      aggregateId: r.aggregate_id,
      payload: r.payload,
      attempts: r.attempts,
      createdAt: r.created_at,
      takenOver: r.taken_over,
    }))
    .sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1));
}

interface ClaimRow {
  id: string;
  seq: string;
  topic: string;
  aggregate_type: string;
  aggregate_id: string;
  payload: unknown;
  attempts: number;
  created_at: Date;
  taken_over: boolean;
}

/**
 * Marks events published, each with the sink's receipt, where the claim `token` still holds.
 * Returns the ids actually marked; an id missing from the result was taken over by another
 * publisher (its lease expired) and is that publisher's to finish.
 */
export async function markPublished(
  db: Db,
  token: string,
  delivered: { id: string; result: Prisma.InputJsonValue | null }[],
): Promise<Set<string>> {
  if (delivered.length === 0) return new Set();
  const ids = delivered.map((d) => d.id);
  const results = delivered.map((d) => (d.result === null ? null : JSON.stringify(d.result)));
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE outbox_event o
       SET status = 'published', published_at = now(), claim_token = NULL, claimed_until = NULL,
           result = r.result::jsonb
      FROM unnest(${ids}::uuid[], ${results}::text[]) AS r(id, result)
     -- id = ANY(...) as well: the planner then looks rows up by primary key instead of scanning
     -- every pending event (its estimate for the unnest join alone is poor).
     WHERE o.id = ANY(${ids}::uuid[]) AND o.id = r.id
       AND o.claim_token = ${token}::uuid AND o.status = 'pending'
    RETURNING o.id::text AS id`;
  return new Set(rows.map((r) => r.id));
}

export interface FailedDelivery {
  id: string;
  errorType: string;
  /** Redacted, bounded message. */
  message: string;
  /** Delay before the next attempt. */
  retryInMs: number;
  /** The sink it was meant for (metrics), `none` without a route. */
  sink?: string;
  /** True when retrying cannot help (a non-retryable error type): dead at once. */
  permanent: boolean;
}

/**
 * Records a failed delivery where `token` still holds: one more attempt, the error, and either a
 * new `available_at` or, at `maxAttempts` (or for a permanent error), status `dead`. Returns the
 * new status, or undefined when the claim was lost (nothing written).
 */
export async function markFailed(
  db: Db,
  token: string,
  failed: FailedDelivery,
  maxAttempts: number,
): Promise<'pending' | 'dead' | undefined> {
  const rows = await db.$queryRaw<{ status: 'pending' | 'dead' }[]>`
    UPDATE outbox_event
       SET attempts = attempts + 1,
           status = CASE WHEN ${failed.permanent} OR attempts + 1 >= ${maxAttempts}
                         THEN 'dead'::outbox_status ELSE 'pending'::outbox_status END,
           -- A dead event keeps the time it died here (operators see it as "failed at").
           available_at = CASE WHEN ${failed.permanent} OR attempts + 1 >= ${maxAttempts} THEN now()
                               ELSE now() + ${failed.retryInMs} * interval '1 millisecond' END,
           last_error_type = ${failed.errorType}, last_error = ${failed.message},
           claim_token = NULL, claimed_until = NULL
     WHERE id = ${failed.id}::uuid AND claim_token = ${token}::uuid AND status = 'pending'
    RETURNING status::text AS status`;
  return rows[0]?.status;
}

/** Gives claimed events back undelivered (graceful stop, lease running out): claimable at once. */
export async function release(db: Db, token: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  return db.$executeRaw`
    UPDATE outbox_event SET claim_token = NULL, claimed_until = NULL
     WHERE id = ANY(${ids}::uuid[]) AND claim_token = ${token}::uuid AND status = 'pending'`;
}
