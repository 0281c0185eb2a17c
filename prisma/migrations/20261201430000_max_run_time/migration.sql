-- Every run has a maximum run time (R9), per source: fixed when the run is claimed, it covers the
-- whole run (continue-as-new, pauses and retries included). Existing sources get the default, a day.

-- AlterTable
ALTER TABLE "source" ADD COLUMN "max_run_time_ms" INTEGER NOT NULL DEFAULT 86400000;
