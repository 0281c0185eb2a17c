-- Removing a source is a soft removal: its runs, records, dead letters and audit trail keep
-- pointing at it (foreign keys), and its id is never given to another source. Nullable columns
-- without a default: PostgreSQL adds them without rewriting the table.

-- AlterTable
ALTER TABLE "source" ADD COLUMN "removed_at" TIMESTAMPTZ(3),
ADD COLUMN "removed_by" TEXT;
