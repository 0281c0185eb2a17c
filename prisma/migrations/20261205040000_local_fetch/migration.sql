-- A source may have its runs fetch partner pages as local activities (in the worker that runs the
-- workflow) instead of activity tasks on a task queue: fixed when a run is claimed. Existing
-- sources keep fetching as activity tasks.

-- AlterTable
ALTER TABLE "source" ADD COLUMN "local_fetch" BOOLEAN NOT NULL DEFAULT false;
