-- CreateTable
CREATE TABLE "fetched_page" (
    "key" TEXT NOT NULL,
    "start_cursor" TEXT,
    "cursor" TEXT,
    "complete" BOOLEAN NOT NULL DEFAULT false,
    "record_count" INTEGER NOT NULL,
    "records" JSONB NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "fetched_page_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "fetched_page_expires_at_idx" ON "fetched_page"("expires_at");
