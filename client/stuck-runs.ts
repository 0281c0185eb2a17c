/**
 * Finding stuck runs: `fetch_run` rows that say `running` (or `retry_wait`: a step waiting for its
 * next attempt is just as live) while their workflow is closed or gone.
 *
 * A row is a candidate once its lease has run out (`lease_until < now()`, DURABLE_FETCH_LEASE_TTL_MS
 * after its last renewal): a live workflow keeps renewing its lease, so only rows whose owner went
 * quiet cost a call to Temporal (the candidates' statement: db/stuck-runs.ts). Finding changes
 * nothing; settling is worker/sweeps/stuck-runs.ts.
 */
import type { Client } from '@temporalio/client';
import { FIRST_CANDIDATE, readStuckCandidates } from '../db/stuck-runs.ts';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { errorMessage } from '../runtime/errors.ts';
import { redactUrlsIn } from '../runtime/redact.ts';
import { type ClosedEnd, readWorkflowEnd, type Settlement, settlementOf } from './workflow-close.ts';

/** Candidates read per query, and at most per pass (the next pass goes on from the start). */
const BATCH = 100;
export const DEFAULT_MAX_RUNS = 500;

export interface StuckRunsContext {
  prisma: PrismaClient;
  temporal: Client;
}

/** A run whose row says it is live while its workflow is closed or gone, and how to record it. */
export interface StuckRun {
  fetchRunId: string;
  workflowId: string;
  jobType: string;
  sourceId: string;
  businessDate: string;
  /** The claim (`attempt`) whose end is recorded; its downstream actions are compensated. */
  round: number;
  found: ClosedEnd['found'];
  /** The closed execution's run id (absent when the workflow is gone). */
  closedRunId: string | null;
  settlement: Settlement;
}

/** A candidate whose workflow could not be looked up: it may be stuck. */
export interface UncheckedRun {
  fetchRunId: string;
  workflowId: string;
  error: string;
}

/** A stuck run with what settling it needs: the lease token that fences the settle, its queue. */
export interface Found extends StuckRun {
  leaseToken: string;
  taskQueue: string | null;
}

/**
 * Walks the candidates (live, lease run out) oldest lease first, at most `maxRuns`, and hands
 * each stuck one to `onStuck`. Runs whose workflow is still open are skipped, untouched.
 */
export async function scan(
  ctx: StuckRunsContext,
  maxRuns: number,
  onStuck: (run: Found) => Promise<void>,
): Promise<{ checked: number; unchecked: UncheckedRun[] }> {
  const unchecked: UncheckedRun[] = [];
  let checked = 0;
  let after = FIRST_CANDIDATE;
  while (checked < maxRuns) {
    const batch = await readStuckCandidates(ctx.prisma, after, Math.min(BATCH, maxRuns - checked));
    for (const c of batch) {
      checked++;
      let end;
      try {
        end = await readWorkflowEnd(ctx.temporal, c.workflow_id);
      } catch (err) {
        unchecked.push({
          fetchRunId: c.id,
          workflowId: c.workflow_id,
          error: redactUrlsIn(errorMessage(err)),
        });
        continue;
      }
      if (end.found === 'running') continue;
      await onStuck({
        fetchRunId: c.id,
        workflowId: c.workflow_id,
        jobType: c.job_type,
        sourceId: c.source_id,
        businessDate: c.business_date,
        round: c.attempt,
        found: end.found,
        closedRunId: 'runId' in end ? end.runId : null,
        settlement: settlementOf(end),
        leaseToken: c.lease_token,
        taskQueue: 'taskQueue' in end ? end.taskQueue : null,
      });
    }
    const last = batch.at(-1);
    if (!last || batch.length < BATCH) break;
    after = { leaseUntil: last.lease_until, id: last.id };
  }
  return { checked, unchecked };
}

/** What callers are shown of a stuck run: never its lease token. */
export const publicView = ({ leaseToken: _token, taskQueue: _queue, ...run }: Found): StuckRun => run;

/**
 * The stuck runs now, without changing anything (for `durable-fetch status`): candidates whose
 * latest workflow execution is closed, or whose workflow is gone. Read-only.
 * @throws database errors; Temporal errors of one run are returned as `unchecked`.
 */
export async function findStuckRuns(
  ctx: StuckRunsContext,
  options: { maxRuns?: number } = {},
): Promise<{ checked: number; stuck: StuckRun[]; unchecked: UncheckedRun[] }> {
  const stuck: StuckRun[] = [];
  const scanned = await scan(ctx, options.maxRuns ?? DEFAULT_MAX_RUNS, (run) => {
    stuck.push(publicView(run));
    return Promise.resolve();
  });
  return { ...scanned, stuck };
}
