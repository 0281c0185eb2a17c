/**
 * Operators' statements on `outbox_event` (R5): requeue dead events, per-topic status, list dead
 * events. The publisher's are in outbox.ts.
 */
import type { PrismaClient } from '../../prisma/generated/client.ts';

type Db = Pick<PrismaClient, '$queryRaw'>;

/**
 * Puts dead events back to `pending` with a fresh attempt budget, due now. Only dead events are
 * touched; returns the ids requeued. Their last error stays for the record until the next attempt.
 */
export async function requeueDead(db: Db, filter: { ids?: string[]; topic?: string }): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE outbox_event
       SET status = 'pending', attempts = 0, available_at = now(), claim_token = NULL, claimed_until = NULL
     WHERE status = 'dead'
       AND (${filter.ids ?? null}::uuid[] IS NULL OR id = ANY(${filter.ids ?? null}::uuid[]))
       AND (${filter.topic ?? null}::text IS NULL OR topic = ${filter.topic ?? null}::text)
    RETURNING id::text AS id`;
  return rows.map((r) => r.id);
}

/** Outbox state of one topic, as `outbox status` shows it. */
export interface TopicStatus {
  topic: string;
  pending: number;
  /** Pending events under a live claim (being delivered now). */
  inFlight: number;
  /** Pending events that failed at least once and wait for their next attempt. */
  retrying: number;
  dead: number;
  /** Age in ms of the oldest pending event (by creation), or null with none pending. */
  oldestPendingMs: number | null;
}

/** Per-topic counts of everything not yet published, by the database's clock. */
export async function topicStatus(db: Db): Promise<TopicStatus[]> {
  const rows = await db.$queryRaw<
    {
      topic: string;
      pending: number;
      in_flight: number;
      retrying: number;
      dead: number;
      oldest_ms: number | null;
    }[]
  >`
    SELECT topic,
           count(*) FILTER (WHERE status = 'pending')::int AS pending,
           count(*) FILTER (WHERE status = 'pending' AND claimed_until > now())::int AS in_flight,
           count(*) FILTER (WHERE status = 'pending' AND attempts > 0)::int AS retrying,
           count(*) FILTER (WHERE status = 'dead')::int AS dead,
           (extract(epoch FROM now() - min(created_at) FILTER (WHERE status = 'pending')) * 1000)::float8
             AS oldest_ms
      FROM outbox_event WHERE status <> 'published'
     GROUP BY topic ORDER BY topic`;
  return rows.map((r) => ({
    topic: r.topic,
    pending: r.pending,
    inFlight: r.in_flight,
    retrying: r.retrying,
    dead: r.dead,
    oldestPendingMs: r.oldest_ms === null ? null : Math.max(0, Math.round(r.oldest_ms)),
  }));
}

/** A dead event as operators list and inspect it (its payload holds ids, never secrets: R2). */
export interface DeadEvent {
  id: string;
  seq: string;
  topic: string;
  aggregateType: string;
  aggregateId: string;
  attempts: number;
  lastErrorType: string | null;
  lastError: string | null;
  createdAt: Date;
  /** When it went dead (its last attempt). */
  failedAt: Date;
  payload: unknown;
}

/** Dead events, oldest first. */
export async function listDead(
  db: Db,
  filter: { topic?: string; id?: string; limit?: number } = {},
): Promise<DeadEvent[]> {
  const rows = await db.$queryRaw<
    {
      id: string;
      seq: string;
      topic: string;
      aggregate_type: string;
      aggregate_id: string;
      attempts: number;
      last_error_type: string | null;
      last_error: string | null;
      created_at: Date;
      available_at: Date;
      payload: unknown;
    }[]
  >`
    SELECT id::text AS id, seq::text AS seq, topic, aggregate_type, aggregate_id, attempts,
           last_error_type, last_error, created_at, available_at, payload
      FROM outbox_event
     WHERE status = 'dead'
       AND (${filter.topic ?? null}::text IS NULL OR topic = ${filter.topic ?? null}::text)
       AND (${filter.id ?? null}::uuid IS NULL OR id = ${filter.id ?? null}::uuid)
     ORDER BY seq LIMIT ${filter.limit ?? 100}`;
  return rows.map((r) => ({
    id: r.id,
    seq: r.seq,
    topic: r.topic,
    aggregateType: r.aggregate_type,
    aggregateId: r.aggregate_id,
    attempts: r.attempts,
    lastErrorType: r.last_error_type,
    lastError: r.last_error,
    createdAt: r.created_at,
    // markFailed stamps a dead event's available_at with the time it died.
    failedAt: r.available_at,
    payload: r.payload,
  }));
}
