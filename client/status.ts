/**
 * `durable-fetch status`: one screen that says whether things are healthy (R10) — backlog per
 * task queue (the deployment's and each isolated downstream's) with its trend and the worker
 * builds polling it, completion against arrival, retries and the runs waiting for a step's next
 * attempt, open dead letters, outbox lag, compensations needing a human, each job type's runs and
 * dead letters, each source's downstream status, and each downstream's circuit breaker and retry
 * budget (R8).
 */
import type { Client } from '@temporalio/client';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { databaseHealth, type DatabaseHealth } from '../db/health.ts';
import {
  type JobStatus,
  readJobStatus,
  readRunCounts,
  readSourceCounts,
  type RunCounts,
} from '../db/status.ts';
import { readRetryWaits } from '../db/retry/retry-wait.ts';
import {
  type BacklogVerdict,
  backlogRisk,
  describeQueues,
  type QueueStats,
  readWatchedQueues,
} from './health.ts';
import { type PollingBuild, readPollingBuilds } from './status-builds.ts';
import { findStuckRuns, type StuckRun } from './stuck-runs.ts';
import { type OrphanedActions, readOrphanedActions } from '../db/ledger/orphaned-actions.ts';
import { breakerProblems, type DownstreamBreaker, listBreakers } from './breakers.ts';

export type { JobStatus };

/** A watched queue: the deployment's (workflow, activity) or an isolated downstream's (`downstream`). */
export interface QueueStatus extends QueueStats {
  /** The trend over the window, from the workers' samples (`queue_sample`). */
  verdict: BacklogVerdict;
  samples: number;
}

export interface SourceStatus {
  sourceId: string;
  jobType: string;
  paused: boolean;
  lastSuccessAt: string | null;
  /**
   * Runs that ended in the window, and dead letters written in it (runs that failed for good in
   * the window, whatever became of them since). Information: `status` does not judge by them.
   */
  finished: number;
  failed: number;
  /** failed / finished in the window, null without runs. Information too. */
  errorRate: number | null;
  /**
   * Open dead letters of the source (any age): its runs failed for good now, not since succeeded,
   * retried or discarded. What `status` judges by.
   */
  deadLettersOpen: number;
}

export interface Status {
  at: string;
  windowSeconds: number;
  /** The job type `--job` narrowed runs, jobs, sources and open dead letters to; null for all. */
  jobType: string | null;
  healthy: boolean;
  /** What needs attention, one line each; empty when healthy. */
  problems: string[];
  /** The deployment's queues, then every isolated downstream's (activity tasks only). */
  queues: QueueStatus[];
  /** The worker builds polling the queues' workflow tasks, each with its last poll. */
  builds: PollingBuild[];
  runs: RunCounts;
  /**
   * Runs in `retry_wait` now (R1): a step failed retryably and waits for its next attempt; by the
   * error class of that failure, and when the earliest next attempt is due. Narrowed by `jobType`.
   */
  retryWait: { runs: number; byErrorClass: Record<string, number>; nextDueAt: string | null };
  database: DatabaseHealth;
  /**
   * Runs still `running` past their lease whose workflow is closed or gone (live from Temporal),
   * and those whose workflow could not be looked up.
   */
  stuck: { runs: StuckRun[]; unchecked: number };
  /**
   * Downstream actions that still need settling while their run has no live owner (a terminated
   * workflow's, a compensation that never ran): their count, and the first of their runs.
   */
  orphans: OrphanedActions;
  /** One row per job type (only the narrowed one with `jobType`). */
  jobs: JobStatus[];
  sources: SourceStatus[];
  /** Every known downstream's circuit breaker and retry-budget use (R8; shared by every job). */
  breakers: DownstreamBreaker[];
}

/** Candidates (running, lease run out) `status` looks up in Temporal at most. */
const MAX_STUCK_CHECKED = 100;

/**
 * Reads Temporal (live task-queue stats) and PostgreSQL (samples, runs, outbox, dead letters,
 * compensations). Read-only. `windowMs` is the history the trend and the rates look at.
 * `taskQueues` are looked at whole (workflow and activity tasks); with `isolatedQueuesOf` (the
 * deployment's task queue), so is the queue of every downstream isolated in the database now.
 * `jobType` narrows the run counts, the job and source rows and the open dead letters (also as a
 * problem) to that job; queues, outbox, compensations, strays, stuck runs and breakers stay
 * deployment-wide: they are shared by every job.
 */
export async function readStatus(
  ctx: {
    prisma: PrismaClient;
    temporal: Client;
    namespace: string;
    taskQueues: readonly string[];
    isolatedQueuesOf?: string;
  },
  options: { windowMs?: number; now?: Date; jobType?: string } = {},
): Promise<Status> {
  const windowMs = options.windowMs ?? 600_000;
  const now = options.now ?? new Date();
  const since = new Date(now.getTime() - windowMs);
  const only = options.jobType ?? null;
  const watched = await readWatchedQueues(ctx.prisma, ctx.taskQueues, ctx.isolatedQueuesOf);
  const queues = await Promise.all(
    (await describeQueues(ctx.temporal, ctx.namespace, watched)).map(async (live): Promise<QueueStatus> => {
      const stored = await ctx.prisma.queueSample.findMany({
        where: { taskQueue: live.taskQueue, type: live.type, at: { gte: since } },
        orderBy: { at: 'asc' },
      });
      const samples = [...stored.map((s) => ({ ...s, backlog: Number(s.backlog) })), { at: now, ...live }];
      return { ...live, verdict: backlogRisk(samples, now, { windowMs }), samples: samples.length };
    }),
  );
  const builds = await readPollingBuilds(ctx.temporal, ctx.namespace, ctx.taskQueues, now);
  const runs = await readRunCounts(ctx.prisma, since, only);
  const database = await databaseHealth(ctx.prisma);
  const retryWait = await readRetryWaits(ctx.prisma, only);
  const stuck = await findStuckRuns(ctx, { maxRuns: MAX_STUCK_CHECKED });
  const orphans = await readOrphanedActions(ctx.prisma);
  const sourceRows = await readSourceCounts(ctx.prisma, since, only);
  const jobs = await readJobStatus(ctx.prisma, since, options.jobType);
  const breakers = await listBreakers(ctx);
  const sources = sourceRows.map((s) => ({
    sourceId: s.sourceId,
    jobType: s.jobType,
    paused: s.paused,
    lastSuccessAt: s.lastSuccess?.toISOString() ?? null,
    finished: s.finished,
    failed: s.failed,
    errorRate: s.finished === 0 ? null : Math.min(1, s.failed / s.finished),
    deadLettersOpen: s.deadLettersOpen,
  }));

  const problems: string[] = [];
  for (const q of queues) {
    if (q.verdict.risk) {
      const of = q.downstream === undefined ? '' : `, downstream ${q.downstream}`;
      problems.push(`backlog risk on ${q.taskQueue} (${q.type}${of}): ${q.verdict.reason}`);
    }
  }
  // Runs failed for good are judged by what is failed now: open dead letters. A letter retried (to
  // success or still running), discarded, or closed by a later success of its run is no problem,
  // at once; how many failed in the window is shown, not judged.
  const lettersOpen = only === null ? database.deadLettersOpen : (jobs[0]?.deadLettersOpen ?? 0);
  if (lettersOpen > 0) {
    problems.push(`${lettersOpen} open dead letters (dlq list${only === null ? '' : ` --job ${only}`})`);
  }
  if (database.straysUnsettled > 0) {
    problems.push(
      `${database.straysUnsettled} stray submissions at partners not yet voided (compensations list --stray)`,
    );
  }
  if (database.compensationsNeedsManual > 0) {
    problems.push(
      `${database.compensationsNeedsManual} compensations need a human (compensations list --state needs_manual)`,
    );
  }
  if (database.credentialsNeedingReauthorization > 0) {
    const n = database.credentialsNeedingReauthorization;
    problems.push(
      `${n} OAuth2 ${n === 1 ? 'credential needs' : 'credentials need'} reauthorization: the runs that use ${n === 1 ? 'it' : 'them'} fail (credentials list; credentials set)`,
    );
  }
  if (stuck.stuck.length > 0) {
    const n = stuck.stuck.length;
    problems.push(
      `${n} ${n === 1 ? 'run' : 'runs'} stuck: their workflow closed while the row says running (durable-fetch reconcile --stuck)`,
    );
  }
  if (stuck.unchecked.length > 0) {
    problems.push(
      `${stuck.unchecked.length} runs past their lease could not be looked up in Temporal: ${stuck.unchecked[0]?.error ?? ''}`,
    );
  }
  if (orphans.count > 0) {
    problems.push(
      `${orphans.count} downstream ${orphans.count === 1 ? 'action' : 'actions'} unsettled with no live run (durable-fetch reconcile --stuck)`,
    );
  }
  if (database.outboxDead > 0) problems.push(`${database.outboxDead} dead outbox events (outbox dead list)`);
  if (database.outboxOldestPendingAgeSeconds > 60) {
    problems.push(
      `outbox lag: oldest pending event is ${database.outboxOldestPendingAgeSeconds.toFixed(0)} s old`,
    );
  }
  problems.push(...breakerProblems(breakers));
  return {
    at: now.toISOString(),
    windowSeconds: windowMs / 1000,
    jobType: only,
    healthy: problems.length === 0,
    problems,
    queues,
    builds,
    runs,
    retryWait: { ...retryWait, nextDueAt: retryWait.nextDueAt?.toISOString() ?? null },
    database,
    stuck: { runs: stuck.stuck, unchecked: stuck.unchecked.length },
    orphans,
    jobs,
    sources,
    breakers,
  };
}
