/**
 * `durable-fetch status`, per job type: several jobs run side by side in one deployment, and an
 * operator must see which of them is failing or backing up without reading every source.
 */
import type { PrismaClient } from '../prisma/generated/client.ts';

export interface JobStatus {
  jobType: string;
  /** Enabled sources of this job type. */
  sources: number;
  /** Runs `running` now, and runs waiting to (queued, or waiting to retry). */
  running: number;
  waiting: number;
  /** Runs started and ended in the window, and dead letters written in it (runs failed for good). */
  started: number;
  finished: number;
  failed: number;
  /** Dead letters of this job type waiting for an operator (any age). */
  deadLettersOpen: number;
}

interface JobRow {
  job_type: string;
  sources: bigint;
  running: bigint;
  waiting: bigint;
  started: bigint;
  finished: bigint;
  failed: bigint;
  letters: bigint;
}

/**
 * One row per job type that has a source, an unfinished or recent run, or an open dead letter,
 * sorted by type; only `jobType`'s row when given. `since` starts the window. Read-only.
 */
export async function readJobStatus(
  prisma: Pick<PrismaClient, '$queryRaw'>,
  since: Date,
  jobType?: string,
): Promise<JobStatus[]> {
  const only = jobType ?? null;
  const rows = await prisma.$queryRaw<JobRow[]>`
    WITH types AS (
      SELECT job_type FROM source
      UNION SELECT job_type FROM fetch_run
             WHERE status IN ('queued', 'running', 'retry_wait') OR started_at >= ${since} OR finished_at >= ${since}
      UNION SELECT job_type FROM dead_letter WHERE status = 'open' OR created_at >= ${since}
    )
    SELECT t.job_type,
           (SELECT count(*) FROM source s WHERE s.job_type = t.job_type AND s.enabled) AS sources,
           (SELECT count(*) FROM fetch_run r WHERE r.job_type = t.job_type AND r.status = 'running') AS running,
           (SELECT count(*) FROM fetch_run r
             WHERE r.job_type = t.job_type AND r.status IN ('queued', 'retry_wait')) AS waiting,
           (SELECT count(*) FROM fetch_run r WHERE r.job_type = t.job_type AND r.started_at >= ${since}) AS started,
           (SELECT count(*) FROM fetch_run r WHERE r.job_type = t.job_type AND r.finished_at >= ${since}) AS finished,
           (SELECT count(*) FROM dead_letter d WHERE d.job_type = t.job_type AND d.created_at >= ${since}) AS failed,
           (SELECT count(*) FROM dead_letter d WHERE d.job_type = t.job_type AND d.status = 'open') AS letters
      FROM types t
     WHERE ${only}::text IS NULL OR t.job_type = ${only}
     ORDER BY t.job_type`;
  return rows.map((r) => ({
    jobType: r.job_type,
    sources: Number(r.sources),
    running: Number(r.running),
    waiting: Number(r.waiting),
    started: Number(r.started),
    finished: Number(r.finished),
    failed: Number(r.failed),
    deadLettersOpen: Number(r.letters),
  }));
}
