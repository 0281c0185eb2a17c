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
import { Prisma, type PrismaClient } from '../../prisma/generated/client.ts';
import { SESSION_BOUNDS } from '../limits.ts';
import { currentTraceContext } from '../../runtime/trace-spans.ts';

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
  // The writer's span (the step that stores them), when it traces: every event of one statement
  // is written by the same one.
  const traced = currentTraceContext();
  const traceContext = traced === undefined ? null : JSON.stringify(traced);
  return Prisma.sql`
    INSERT INTO outbox_event (id, topic, aggregate_type, aggregate_id, payload, created_at, available_at,
                              trace_context)
    SELECT e.id, e.topic, e.aggregate_type, e.aggregate_id, e.payload::jsonb, e.at, e.at,
           ${traceContext}::jsonb
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
  /** W3C trace context of the span that wrote it, when that one traced. */
  traceContext?: Record<string, string>;
}

export interface Claim {
  token: string;
  /** Local clock time after which the claim must be treated as lost (lease minus a margin). */
  deadline: number;
  events: ClaimedEvent[];
}

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
 *
 * One statement, the migration's `df_outbox_claim`: claims are serialised by an advisory lock it
 * takes before its snapshot (so each claim sees the previous one), held only while the statement
 * runs; a claimer waiting behind a frozen server-side holder gives up after the session bound's
 * lock timeout and tries again.
 */
export async function claimBatch(
  db: Db,
  opts: { token: string; limit: number; leaseMs: number },
): Promise<ClaimedEvent[]> {
  const rows = await db.$queryRaw<ClaimRow[]>`
    SELECT id, seq, topic, aggregate_type, aggregate_id, payload, attempts, created_at, taken_over,
           trace_context
      FROM df_outbox_claim(${opts.token}::uuid, ${opts.limit}::int, ${opts.leaseMs}::float8,
                           ${`${SESSION_BOUNDS.lockTimeoutMs}ms`})`;
  // In seq order (the function's ORDER BY).
  return rows.map((r) => ({
    id: r.id,
    seq: r.seq,
    topic: r.topic,
    aggregateType: r.aggregate_type,
    aggregateId: r.aggregate_id,
    payload: r.payload,
    attempts: r.attempts,
    createdAt: r.created_at,
    takenOver: r.taken_over,
    ...(r.trace_context ? { traceContext: r.trace_context } : {}),
  }));
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
  trace_context: Record<string, string> | null;
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

/**
 * Gives back every event still pending under the claim `tokens`: claims whose answer never came
 * back (the connection failed while the claim ran, so it may have committed), of which nothing was
 * delivered. Claimable at once, instead of after their lease. Returns how many were given back.
 */
export async function releaseClaims(db: Db, tokens: string[]): Promise<number> {
  if (tokens.length === 0) return 0;
  return db.$executeRaw`
    UPDATE outbox_event SET claim_token = NULL, claimed_until = NULL
     WHERE claim_token = ANY(${tokens}::uuid[]) AND status = 'pending'`;
}

/** Gives claimed events back undelivered (graceful stop, lease running out): claimable at once. */
export async function release(db: Db, token: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  return db.$executeRaw`
    UPDATE outbox_event SET claim_token = NULL, claimed_until = NULL
     WHERE id = ANY(${ids}::uuid[]) AND claim_token = ${token}::uuid AND status = 'pending'`;
}
