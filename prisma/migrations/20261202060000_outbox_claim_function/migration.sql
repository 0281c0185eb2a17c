-- The outbox claim (db/outbox.ts claimBatch) as one statement: a function, so that a claim is one
-- round trip instead of an interactive transaction of five (begin, settings, lock, claim, commit),
-- its plan is kept per session, and the claim lock is held only while the server runs it (a
-- claimer that freezes between statements can no longer sit on it).
--
-- Claims are serialised by a transaction-scoped advisory lock: the claim below runs after the lock
-- is held and, in a VOLATILE function, takes its own snapshot then, so it already sees the
-- previous claim (committed when the previous call's statement ended). Per-aggregate order: an
-- event is claimable only when every earlier event of its aggregate is published or claimable
-- right now; SKIP LOCKED may pass over an earlier event another transaction is writing, so only
-- events whose undelivered predecessors are all locked here too are kept.
--
-- enable_bitmapscan off: walk the pending index in seq order and stop at the batch size. Queue
-- tables' statistics are always stale, and a planner that believes "few pending rows" sorts all of
-- them and checks each one's predecessors (90 ms instead of 5 ms at a few thousand pending).
CREATE FUNCTION df_outbox_claim(p_token UUID, p_limit INTEGER, p_lease_ms DOUBLE PRECISION, p_lock_timeout TEXT)
RETURNS TABLE (
    id TEXT, seq TEXT, topic TEXT, aggregate_type TEXT, aggregate_id TEXT, payload JSONB,
    attempts INTEGER, created_at TIMESTAMPTZ, taken_over BOOLEAN)
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
                  o.created_at, c.taken_over)
    SELECT c.id::text, c.seq::text, c.topic, c.aggregate_type, c.aggregate_id, c.payload, c.attempts,
           c.created_at, c.taken_over
      FROM claimed c
     ORDER BY c.seq;
END
$$;
