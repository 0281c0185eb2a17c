-- Schedules (issue #5): when a source runs on its own.

-- AlterTable
ALTER TABLE "source" ADD COLUMN "schedule" JSONB;
