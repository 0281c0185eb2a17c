-- Jobs as plug-ins: each source names the job that runs it and carries that job's settings, and the
-- exchange-rates job gets its own table (its models live in prisma/schema/exchange-rates.prisma).

-- AlterTable
-- Constant defaults: PostgreSQL 11+ records them in the catalog without rewriting the table, and
-- every existing source keeps running the job it always ran.
ALTER TABLE "source" ADD COLUMN "job_type" TEXT NOT NULL DEFAULT 'fetch-records',
ADD COLUMN "config" JSONB NOT NULL DEFAULT '{}';

-- CreateIndex
CREATE INDEX "source_job_type_idx" ON "source"("job_type");

-- CreateTable
CREATE TABLE "exchange_rate" (
    "id" BIGSERIAL NOT NULL,
    "source_id" TEXT NOT NULL,
    "base" TEXT NOT NULL,
    "quote" TEXT NOT NULL,
    "rate_date" DATE NOT NULL,
    "rate" DECIMAL(24,12) NOT NULL,
    "fetch_run_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "exchange_rate_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "exchange_rate_fetch_run_id_idx" ON "exchange_rate"("fetch_run_id");

-- CreateIndex
CREATE UNIQUE INDEX "exchange_rate_source_id_base_quote_rate_date_key" ON "exchange_rate"("source_id", "base", "quote", "rate_date");
