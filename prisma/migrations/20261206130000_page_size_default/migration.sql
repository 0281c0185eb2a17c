-- A new source stores pages of 1,000 records unless told otherwise (was 200): a stored page's
-- fixed cost (its activity, its transaction, its idempotency record) is paid five times less
-- often, and the history holds counts and cursors only, whatever the page's size
-- (docs/performance.md, "Bulk pulls"). Existing sources keep their page size.

-- AlterTable
ALTER TABLE "source" ALTER COLUMN "page_size" SET DEFAULT 1000;
