-- Each outbox event keeps the W3C trace context (`traceparent`, `tracestate`) of the span that
-- wrote it, when the writer traced (runtime/trace-spans.ts): the publisher delivers it as the
-- child of that span, and hands the context on to the consumer (a webhook's `traceparent` header,
-- a NATS message's headers, the start of a run), so a consumer's span joins the run's trace.
-- Null when the writer did not trace.
--
-- df_outbox_claim returns it with the rest of a claimed event: the function is the previous
-- migration's, with one more column (a function's result type cannot be altered in place).

-- AlterTable
ALTER TABLE "outbox_event" ADD COLUMN "trace_context" JSONB;

DROP FUNCTION df_outbox_claim(UUID, INTEGER, DOUBLE PRECISION, TEXT);

CREATE FUNCTION df_outbox_claim(p_token UUID, p_limit INTEGER, p_lease_ms DOUBLE PRECISION, p_lock_timeout TEXT)
RETURNS TABLE (
    id TEXT, seq TEXT, topic TEXT, aggregate_type TEXT, aggregate_id TEXT, payload JSONB,
    attempts INTEGER, created_at TIMESTAMPTZ, taken_over BOOLEAN, trace_context JSONB)
LANGUAGE plpgsql
SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
BEGIN
    -- A claimer waiting behind a stuck holder gives up and tries again, whatever its session says.
    PERFORM set_config('lock_timeout', p_lock_timeout, true);
    PERFORM pg_advisory_xact_lock(hashtext('durable-fetch:outbox-claim'));
    RETURN QUERY
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
         LIMIT p_limit
         FOR UPDATE SKIP LOCKED),
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
              AND p.status IN ('pending', 'dead') AND p.seq < r.seq)),
    claimed AS (
        UPDATE outbox_event o
           SET claim_token = p_token,
               claimed_until = now() + p_lease_ms * interval '1 millisecond',
               takeovers = o.takeovers + (o.claimed_until IS NOT NULL)::int
          FROM candidate c
         WHERE o.id = c.id
        RETURNING o.id, o.seq, o.topic, o.aggregate_type, o.aggregate_id, o.payload, o.attempts,
                  o.created_at, c.taken_over, o.trace_context)
    SELECT c.id::text, c.seq::text, c.topic, c.aggregate_type, c.aggregate_id, c.payload, c.attempts,
           c.created_at, c.taken_over, c.trace_context
      FROM claimed c
     ORDER BY c.seq;
END
$$;
