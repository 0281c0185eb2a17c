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
CREATE TABLE "downstream_calls" (
    "downstream" TEXT NOT NULL,
    "second" TIMESTAMPTZ(0) NOT NULL,
    "calls" INTEGER NOT NULL DEFAULT 0,
    "retries" INTEGER NOT NULL DEFAULT 0,
    "failures" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "downstream_calls_pkey" PRIMARY KEY ("downstream","second")
);
