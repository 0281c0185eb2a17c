-- A staged page's later partner responses are written once each, as parts of the page, instead of
-- rewriting the page's whole JSON at every append (docs/performance.md, "Bulk pulls"). Pages staged
-- before this keep their records in `fetched_page.records` and take no parts until appended to.

-- CreateTable
CREATE TABLE "fetched_page_part" (
    "key" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "records" JSONB NOT NULL,

    CONSTRAINT "fetched_page_part_pkey" PRIMARY KEY ("key","seq")
);

-- AddForeignKey
ALTER TABLE "fetched_page_part" ADD CONSTRAINT "fetched_page_part_key_fkey" FOREIGN KEY ("key") REFERENCES "fetched_page"("key") ON DELETE CASCADE ON UPDATE CASCADE;
