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
