-- The cursors each run has reached, by digest, so that a partner whose pagination comes back to a
-- cursor it gave before (A -> B -> A) is caught over the whole run. Deleted once the run succeeds.

-- CreateTable
CREATE TABLE "run_cursor" (
    "fetch_run_id" UUID NOT NULL,
    "digest" TEXT NOT NULL,
    "page_no" INTEGER NOT NULL,

    CONSTRAINT "run_cursor_pkey" PRIMARY KEY ("fetch_run_id","digest")
);

-- AddForeignKey
ALTER TABLE "run_cursor" ADD CONSTRAINT "run_cursor_fetch_run_id_fkey" FOREIGN KEY ("fetch_run_id") REFERENCES "fetch_run"("id") ON DELETE CASCADE ON UPDATE CASCADE;
