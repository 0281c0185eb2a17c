-- Outbox publisher (issue #4): delivery order, takeover count, error type and sink receipt.

-- AlterTable
ALTER TABLE "outbox_event" ADD COLUMN "seq" BIGSERIAL NOT NULL,
ADD COLUMN "takeovers" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN "last_error_type" TEXT,
ADD COLUMN "result" JSONB;

-- DropIndex
DROP INDEX "outbox_event_status_available_at_idx";

-- DropIndex
DROP INDEX "outbox_event_aggregate_type_aggregate_id_created_at_idx";

-- CreateIndex
CREATE UNIQUE INDEX "outbox_event_seq_key" ON "outbox_event"("seq");

-- CreateIndex
CREATE INDEX "outbox_event_status_seq_idx" ON "outbox_event"("status", "seq");

-- CreateIndex
CREATE INDEX "outbox_event_aggregate_type_aggregate_id_seq_idx" ON "outbox_event"("aggregate_type", "aggregate_id", "seq");

-- CreateIndex
CREATE INDEX "outbox_event_published_at_idx" ON "outbox_event"("published_at");
