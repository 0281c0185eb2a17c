-- Incremental sources (docs/http-sources.md, "Incremental windows"): a source may read what changed
-- since its watermark instead of a whole business day. The watermark is the highest cursor value
-- (an `updated_at`, an increasing id) its runs have durably stored, kept per source and moved only
-- forward, in the transaction of the page that carries it. A run fixes its window once, before its
-- first partner call, so that every attempt, continue-as-new and replay reads the same one.

-- AlterTable
ALTER TABLE "fetch_run" ADD COLUMN "window_since" TEXT,
ADD COLUMN "window_until" TEXT,
ADD COLUMN "window_head" BOOLEAN,
ADD COLUMN "watermark_seen" TEXT;

-- CreateTable
CREATE TABLE "source_watermark" (
    "source_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "business_date" DATE NOT NULL,
    "fetch_run_id" UUID,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "source_watermark_pkey" PRIMARY KEY ("source_id")
);

-- AddForeignKey
ALTER TABLE "source_watermark" ADD CONSTRAINT "source_watermark_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "source"("id") ON DELETE CASCADE ON UPDATE CASCADE;
