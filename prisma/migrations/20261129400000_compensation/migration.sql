-- Compensation ledger (issue #6): non-idempotent downstream actions, their reconciliation and
-- undo; operators' audit trail.

-- AlterTable
ALTER TABLE "source" ADD COLUMN "submit_summary" BOOLEAN NOT NULL DEFAULT false;

-- CreateEnum
CREATE TYPE "downstream_state" AS ENUM ('attempting', 'unknown', 'confirmed', 'compensating', 'compensated', 'not_applied', 'needs_manual', 'resolved');

-- CreateTable
CREATE TABLE "downstream_action" (
    "id" UUID NOT NULL,
    "fetch_run_id" UUID NOT NULL,
    "business_key" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "round" INTEGER NOT NULL,
    "action" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "reference" TEXT NOT NULL,
    "partner_id" TEXT,
    "partner_state" TEXT,
    "state" "downstream_state" NOT NULL DEFAULT 'attempting',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lookups" INTEGER NOT NULL DEFAULT 0,
    "compensation_attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error_type" TEXT,
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "confirmed_at" TIMESTAMPTZ(3),
    "compensated_at" TIMESTAMPTZ(3),
    "resolved_at" TIMESTAMPTZ(3),
    "resolved_by" TEXT,
    "resolution_note" TEXT,

    CONSTRAINT "downstream_action_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "audit_entry" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target_type" TEXT NOT NULL,
    "target_id" TEXT NOT NULL,
    "reason" TEXT,
    "details" JSONB,

    CONSTRAINT "audit_entry_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "downstream_action_key_key" ON "downstream_action"("key");

-- CreateIndex
CREATE INDEX "downstream_action_fetch_run_id_step_idx" ON "downstream_action"("fetch_run_id", "step");

-- CreateIndex
CREATE INDEX "downstream_action_state_updated_at_idx" ON "downstream_action"("state", "updated_at");

-- CreateIndex
CREATE INDEX "downstream_action_business_key_idx" ON "downstream_action"("business_key");

-- CreateIndex
CREATE INDEX "audit_entry_target_type_target_id_idx" ON "audit_entry"("target_type", "target_id");

-- CreateIndex
CREATE INDEX "audit_entry_at_idx" ON "audit_entry"("at");

-- AddForeignKey
ALTER TABLE "downstream_action" ADD CONSTRAINT "downstream_action_fetch_run_id_fkey" FOREIGN KEY ("fetch_run_id") REFERENCES "fetch_run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
