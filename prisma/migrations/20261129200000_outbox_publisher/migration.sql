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
CREATE INDEX "outbox_event_status_seq_idx" ON "outbox_event"("status", "seq");

-- CreateIndex
CREATE INDEX "outbox_event_aggregate_type_aggregate_id_status_seq_idx" ON "outbox_event"("aggregate_type", "aggregate_id", "status", "seq");

-- CreateIndex
CREATE INDEX "outbox_event_published_at_idx" ON "outbox_event"("published_at");

-- Not expressible in schema.prisma: leave room in each page so that a claim (which changes no
-- indexed column) is a HOT update, writing no index entries. Rows are claimed once or twice and
-- marked once in their short life; the space costs little.
ALTER TABLE "outbox_event" SET (fillfactor = 70);
