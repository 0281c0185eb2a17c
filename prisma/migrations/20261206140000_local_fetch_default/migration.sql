-- A new source fetches its partner pages as local activities unless told otherwise (was: activity
-- tasks): no activity task to schedule, dispatch, start and complete per page, and a page's fetch
-- and store share one workflow task. Sources whose downstream is isolated still fetch on its
-- queue (docs/downstreams.md, "Local page fetches"). Existing sources keep their choice.

-- AlterTable
ALTER TABLE "source" ALTER COLUMN "local_fetch" SET DEFAULT true;
