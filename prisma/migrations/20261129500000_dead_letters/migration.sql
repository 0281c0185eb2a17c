-- Dead letters and source pause (issue #7): runs that need a human, and operators' pause.

-- AlterTable
ALTER TABLE "source" ADD COLUMN "paused_at" TIMESTAMPTZ(3),
ADD COLUMN "paused_reason" TEXT,
ADD COLUMN "paused_by" TEXT;

-- CreateEnum
CREATE TYPE "dead_letter_status" AS ENUM ('open', 'retried', 'discarded');

-- CreateTable
CREATE TABLE "dead_letter" (
    "id" UUID NOT NULL,
    "fetch_run_id" UUID NOT NULL,
    "job_type" TEXT NOT NULL,
    "source_id" TEXT NOT NULL,
    "business_date" DATE NOT NULL,
    "workflow_id" TEXT NOT NULL,
    "workflow_run_id" TEXT,
    "error_type" TEXT NOT NULL,
    "error_code" TEXT,
    "error_message" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL,
    "first_failed_at" TIMESTAMPTZ(3) NOT NULL,
    "last_failed_at" TIMESTAMPTZ(3) NOT NULL,
    "status" "dead_letter_status" NOT NULL DEFAULT 'open',
    "replay_id" TEXT,
    "closed_at" TIMESTAMPTZ(3),
    "closed_by" TEXT,
    "close_reason" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "dead_letter_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "dead_letter_status_source_id_error_type_idx" ON "dead_letter"("status", "source_id", "error_type");

-- CreateIndex
CREATE INDEX "dead_letter_fetch_run_id_idx" ON "dead_letter"("fetch_run_id");

-- CreateIndex
CREATE INDEX "dead_letter_created_at_idx" ON "dead_letter"("created_at");

-- AddForeignKey
ALTER TABLE "dead_letter" ADD CONSTRAINT "dead_letter_fetch_run_id_fkey" FOREIGN KEY ("fetch_run_id") REFERENCES "fetch_run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
