-- The settle window of a non-idempotent call, and strays: a lookup that finds nothing proves
-- nothing until the partner can no longer apply the last call; an effect the ledger did not
-- expect (a stale attempt's, or one reconciliation finds) gets a ledger row of its own to be voided.

-- AlterTable
ALTER TABLE "source" ADD COLUMN "submit_max_processing_ms" INTEGER NOT NULL DEFAULT 60000;

-- AlterTable
ALTER TABLE "downstream_action" ADD COLUMN "last_call_at" TIMESTAMPTZ(3),
ADD COLUMN "settles_at" TIMESTAMPTZ(3),
ADD COLUMN "stray_of" UUID;

-- CreateIndex
CREATE INDEX "downstream_action_stray_of_idx" ON "downstream_action"("stray_of");

-- AddForeignKey
ALTER TABLE "downstream_action" ADD CONSTRAINT "downstream_action_stray_of_fkey" FOREIGN KEY ("stray_of") REFERENCES "downstream_action"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Calls in flight while this is deployed were counted without a window: give them the default
-- one (connect 5 s + response 15 s + 60 s of processing) from their last change.
UPDATE "downstream_action" SET "settles_at" = "updated_at" + interval '80 seconds'
 WHERE "state" IN ('attempting', 'unknown') AND "attempts" > 0 AND "settles_at" IS NULL;
