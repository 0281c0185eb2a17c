/**
 * `durable-fetch status`'s statements (R10): what ran in the window, each enabled source's runs and
 * failures, and each job type's — several jobs run side by side in one deployment, and an operator
 * must see which of them is failing or backing up without reading every source. Read-only; the
 * database's own health counts are in health.ts, runs waiting to retry in retry/retry-wait.ts.
 * `jobType` narrows each to one job type; `since` starts the window.
 *
 * Failed for good is counted two ways: dead letters written in the window (what failed lately,
 * information), and open dead letters (what is failed for good now: not since succeeded, retried
 * or discarded). `status` judges by the second only.
 */
import type { PrismaClient } from '../prisma/generated/client.ts';

/** Runs started, ended, and started again (a later claim) in the window. */
export interface RunCounts {
  started: number;
  finished: number;
  retried: number;
}

/** The run counts since `since`, of `jobType` or of every job. One statement. */
export async function readRunCounts(
  prisma: Pick<PrismaClient, '$queryRaw'>,
  since: Date,
  jobType: string | null,
): Promise<RunCounts> {
  const [runs] = await prisma.$queryRaw<{ started: bigint; finished: bigint; retried: bigint }[]>`
    SELECT count(*) FILTER (WHERE started_at >= ${since}) AS started,
           count(*) FILTER (WHERE finished_at >= ${since}) AS finished,
           count(*) FILTER (WHERE started_at >= ${since} AND attempt > 1) AS retried
      FROM fetch_run
     WHERE (started_at >= ${since} OR finished_at >= ${since}) AND (${jobType}::text IS NULL OR job_type = ${jobType})`;
  return {
    started: Number(runs?.started ?? 0),
    finished: Number(runs?.finished ?? 0),
    retried: Number(runs?.retried ?? 0),
  };
}

/**
 * One enabled source: paused or not, its last success, its runs ended and failed in the window, and
 * its runs failed for good now.
 */
export interface SourceCounts {
  sourceId: string;
  jobType: string;
  paused: boolean;
  lastSuccess: Date | null;
  /** Runs of the source that ended in the window. */
  finished: number;
  /**
   * Dead letters of the source written in the window, whatever became of them since (runs that
   * failed for good in the window, retried or discarded since or not): information.
   */
  failed: number;
  /**
   * Open dead letters of the source, of any age: its runs failed for good now (a retry, a discard
   * or a later success of the run closes a letter).
   */
  deadLettersOpen: number;
}

/** Every enabled source (of `jobType`, or of every job) by id, counted since `since`. */
export async function readSourceCounts(
  prisma: Pick<PrismaClient, '$queryRaw'>,
  since: Date,
  jobType: string | null,
): Promise<SourceCounts[]> {
  const rows = await prisma.$queryRaw<
    {
      id: string;
      job_type: string;
      paused: boolean;
      last_success: Date | null;
      finished: bigint;
      failed: bigint;
      letters: bigint;
    }[]
  >`
    SELECT s.id, s.job_type, s.paused_at IS NOT NULL AS paused,
           (SELECT max(finished_at) FROM fetch_run r WHERE r.source_id = s.id AND r.status = 'succeeded') AS last_success,
           (SELECT count(*) FROM fetch_run r WHERE r.source_id = s.id AND r.finished_at >= ${since}) AS finished,
           (SELECT count(*) FROM dead_letter d WHERE d.source_id = s.id AND d.created_at >= ${since}) AS failed,
           (SELECT count(*) FROM dead_letter d WHERE d.source_id = s.id AND d.status = 'open') AS letters
      FROM source s WHERE s.enabled AND (${jobType}::text IS NULL OR s.job_type = ${jobType}) ORDER BY s.id`;
  return rows.map((s) => ({
    sourceId: s.id,
    jobType: s.job_type,
    paused: s.paused,
    lastSuccess: s.last_success,
    finished: Number(s.finished),
    failed: Number(s.failed),
    deadLettersOpen: Number(s.letters),
  }));
}

export interface JobStatus {
  jobType: string;
  /** Enabled sources of this job type. */
  sources: number;
  /** Runs `running` now, and runs waiting to (queued, or waiting to retry). */
  running: number;
  waiting: number;
  /**
   * Runs started and ended in the window, and dead letters written in it (runs that failed for good
   * in the window, whatever became of them since: information).
   */
  started: number;
  finished: number;
  failed: number;
  /** Dead letters of this job type waiting for an operator (any age): its runs failed for good now. */
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
