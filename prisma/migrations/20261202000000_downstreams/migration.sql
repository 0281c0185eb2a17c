-- R8: downstream settings (from the sources file), the circuit breaker every worker shares, and
-- the per-second call counts its sliding window and the retry budget read.

-- CreateEnum
CREATE TYPE "breaker_state" AS ENUM ('closed', 'open', 'half_open');

-- CreateTable
CREATE TABLE "downstream" (
    "id" TEXT NOT NULL,
    "isolated" BOOLEAN NOT NULL DEFAULT false,
    "max_concurrent_calls" INTEGER NOT NULL DEFAULT 10,
    "calls_per_second" DOUBLE PRECISION,
    "source_calls_per_second" DOUBLE PRECISION,
    "source_weights" JSONB NOT NULL DEFAULT '{}',
    "breaker_failure_rate" DOUBLE PRECISION NOT NULL DEFAULT 0.5,
    "breaker_min_calls" INTEGER NOT NULL DEFAULT 20,
    "breaker_window_ms" INTEGER NOT NULL DEFAULT 60000,
    "breaker_open_ms" INTEGER NOT NULL DEFAULT 30000,
    "breaker_trial_calls" INTEGER NOT NULL DEFAULT 3,
    "retry_budget_ratio" DOUBLE PRECISION NOT NULL DEFAULT 0.2,
    "retry_budget_min_retries" INTEGER NOT NULL DEFAULT 10,
    "retry_budget_window_ms" INTEGER NOT NULL DEFAULT 60000,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "downstream_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "breaker" (
    "downstream" TEXT NOT NULL,
    "state" "breaker_state" NOT NULL DEFAULT 'closed',
    "forced" BOOLEAN NOT NULL DEFAULT false,
    "half_open_at" TIMESTAMPTZ(3),
    "half_open_since" TIMESTAMPTZ(3),
    "trials_started" INTEGER NOT NULL DEFAULT 0,
    "count_from" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "reason" TEXT,
    "changed_by" TEXT,
    "changed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "breaker_pkey" PRIMARY KEY ("downstream")
);

-- CreateTable
-- Unlogged: these counts are statistics every partner call updates, and a write that waits for
-- the WAL to reach the disk would cost each call a flush. A database crash empties the table
-- (the windows start again, the breakers keep their state); standbys do not have it.
CREATE UNLOGGED TABLE "downstream_calls" (
    "downstream" TEXT NOT NULL,
    "second" TIMESTAMPTZ(0) NOT NULL,
    "calls" INTEGER NOT NULL DEFAULT 0,
    "retries" INTEGER NOT NULL DEFAULT 0,
    "failures" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "downstream_calls_pkey" PRIMARY KEY ("downstream","second")
);

-- The admission of one partner call (db/breaker.ts admitCall): a function, so that the
-- statements every call runs are planned once per session rather than on every call, and a call
-- on a closed breaker costs one primary-key read and one upsert. Returns the verdict (`closed`,
-- `trial`: let through and counted; `open`, `forced_open`, `trials_busy`, `retry_budget`:
-- refused), and for `open` the milliseconds until half-open. Concurrent trials are settled by
-- the breaker row's lock: the UPDATE re-checks its condition on the row as the winner left it;
-- concurrent retries by an advisory lock per downstream (below).
CREATE FUNCTION df_admit_call(
    p_downstream TEXT, p_retry BOOLEAN, p_trial_calls INTEGER, p_open_ms INTEGER,
    p_budget_ratio DOUBLE PRECISION, p_budget_min INTEGER, p_budget_window_ms INTEGER)
RETURNS TABLE (verdict TEXT, wait_ms INTEGER)
LANGUAGE plpgsql AS $$
DECLARE
    b breaker%ROWTYPE;
    w_calls INTEGER;
    w_retries INTEGER;
    open_for INTERVAL := make_interval(secs => p_open_ms / 1000.0);
BEGIN
    SELECT * INTO b FROM breaker WHERE downstream = p_downstream;
    IF NOT FOUND OR b.state = 'closed' THEN
        IF p_retry THEN
            -- Retries one at a time per downstream, to the end of this statement's transaction:
            -- two admitted at once would each read the window without the other's count, and
            -- retries refused together wait alike and come back together, far over the budget.
            -- The read below takes its snapshot once the lock is held, so it sees the last count.
            PERFORM pg_advisory_xact_lock(hashtext('durable-fetch:retry-budget:' || p_downstream));
            SELECT COALESCE(sum(c.calls), 0), COALESCE(sum(c.retries), 0) INTO w_calls, w_retries
              FROM downstream_calls c
             WHERE c.downstream = p_downstream
               AND c.second > now() - make_interval(secs => p_budget_window_ms / 1000.0);
            IF w_retries + 1 > GREATEST(p_budget_min, p_budget_ratio * (w_calls + 1)) THEN
                RETURN QUERY SELECT 'retry_budget'::TEXT, NULL::INTEGER;
                RETURN;
            END IF;
        END IF;
        verdict := 'closed';
    ELSIF b.forced THEN
        RETURN QUERY SELECT 'forced_open'::TEXT, NULL::INTEGER;
        RETURN;
    ELSIF b.state = 'open' AND b.half_open_at > now() THEN
        RETURN QUERY SELECT 'open'::TEXT, ceil(EXTRACT(EPOCH FROM (b.half_open_at - now())) * 1000)::INTEGER;
        RETURN;
    ELSE
        UPDATE breaker
           SET state = 'half_open',
               trials_started = CASE WHEN state = 'open' OR half_open_since <= now() - open_for
                                     THEN 1 ELSE trials_started + 1 END,
               half_open_since = CASE WHEN state = 'open' OR half_open_since <= now() - open_for
                                      THEN now() ELSE half_open_since END,
               changed_at = CASE WHEN state = 'open' THEN now() ELSE changed_at END
         WHERE downstream = p_downstream AND NOT forced
           AND ((state = 'open' AND half_open_at <= now())
             OR (state = 'half_open' AND (trials_started < p_trial_calls OR half_open_since <= now() - open_for)));
        IF NOT FOUND THEN
            RETURN QUERY SELECT 'trials_busy'::TEXT, NULL::INTEGER;
            RETURN;
        END IF;
        verdict := 'trial';
    END IF;
    INSERT INTO downstream_calls AS c (downstream, second, calls, retries)
    VALUES (p_downstream, date_trunc('second', now()), 1, CASE WHEN p_retry THEN 1 ELSE 0 END)
    ON CONFLICT (downstream, second) DO UPDATE
       SET calls = c.calls + 1, retries = c.retries + excluded.retries;
    RETURN QUERY SELECT verdict, NULL::INTEGER;
END
$$;
