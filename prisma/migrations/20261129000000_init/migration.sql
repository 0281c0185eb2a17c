-- CreateEnum
CREATE TYPE "run_status" AS ENUM ('queued', 'running', 'retry_wait', 'succeeded', 'dead_lettered', 'cancelled', 'compensated');

-- CreateEnum
CREATE TYPE "outbox_status" AS ENUM ('pending', 'published', 'dead');

-- CreateTable
CREATE TABLE "source" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "base_url" TEXT NOT NULL,
    "credentials_ref" TEXT,
    "timezone" TEXT NOT NULL DEFAULT 'UTC',
    "retry_policy" TEXT NOT NULL DEFAULT 'partnerHttp',
    "downstream" TEXT NOT NULL DEFAULT 'default',
    "page_size" INTEGER NOT NULL DEFAULT 200,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "source_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "fetch_run" (
    "id" UUID NOT NULL,
    "job_type" TEXT NOT NULL,
    "source_id" TEXT NOT NULL,
    "business_date" DATE NOT NULL,
    "payload" JSONB NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "status" "run_status" NOT NULL DEFAULT 'queued',
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "scheduled_at" TIMESTAMPTZ(3) NOT NULL,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "next_run_at" TIMESTAMPTZ(3),
    "lease_token" UUID,
    "lease_until" TIMESTAMPTZ(3),
    "error_class" TEXT,
    "error_message" TEXT,
    "correlation_id" TEXT NOT NULL,
    "workflow_id" TEXT NOT NULL,
    "workflow_run_id" TEXT,
    "pages_stored" INTEGER NOT NULL DEFAULT 0,
    "records_stored" INTEGER NOT NULL DEFAULT 0,
    "cursor" TEXT,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "fetch_run_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "fetched_record" (
    "id" BIGSERIAL NOT NULL,
    "source_id" TEXT NOT NULL,
    "external_id" TEXT NOT NULL,
    "business_date" DATE NOT NULL,
    "fetch_run_id" UUID NOT NULL,
    "data" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "fetched_record_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "outbox_event" (
    "id" UUID NOT NULL,
    "topic" TEXT NOT NULL,
    "aggregate_type" TEXT NOT NULL,
    "aggregate_id" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "status" "outbox_status" NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "available_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "claim_token" UUID,
    "claimed_until" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "published_at" TIMESTAMPTZ(3),

    CONSTRAINT "outbox_event_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "idempotency_record" (
    "key" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "result" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "idempotency_record_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE UNIQUE INDEX "fetch_run_idempotency_key_key" ON "fetch_run"("idempotency_key");

-- CreateIndex
CREATE INDEX "fetch_run_status_updated_at_idx" ON "fetch_run"("status", "updated_at");

-- CreateIndex
CREATE UNIQUE INDEX "fetch_run_job_type_source_id_business_date_key" ON "fetch_run"("job_type", "source_id", "business_date");

-- CreateIndex
CREATE INDEX "fetched_record_fetch_run_id_idx" ON "fetched_record"("fetch_run_id");

-- CreateIndex
CREATE UNIQUE INDEX "fetched_record_source_id_external_id_key" ON "fetched_record"("source_id", "external_id");

-- CreateIndex
CREATE INDEX "outbox_event_status_available_at_idx" ON "outbox_event"("status", "available_at");

-- CreateIndex
CREATE INDEX "outbox_event_aggregate_type_aggregate_id_created_at_idx" ON "outbox_event"("aggregate_type", "aggregate_id", "created_at");

-- CreateIndex
CREATE INDEX "idempotency_record_expires_at_idx" ON "idempotency_record"("expires_at");

-- AddForeignKey
ALTER TABLE "fetch_run" ADD CONSTRAINT "fetch_run_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "source"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "fetched_record" ADD CONSTRAINT "fetched_record_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "source"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "fetched_record" ADD CONSTRAINT "fetched_record_fetch_run_id_fkey" FOREIGN KEY ("fetch_run_id") REFERENCES "fetch_run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
