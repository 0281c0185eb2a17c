/**
 * Durable, rate-limited replay of dead letters (R8, R11): `durable-fetch dlq replay`
 * starts it with id `replay/<replayId>`, so it survives the CLI exiting and workers restarting.
 * It reserves the selected open letters, restarts each one's business-key workflow at most
 * `ratePerSecond` per second (a timer between two starts; Temporal's history, not a worker's
 * memory, says which were started, so nothing is started twice), waits for them, and ends with a
 * reconciliation report counted in the database. Pause and resume by signal; a cancel stops
 * starting, gives the letters not started back and still reports.
 * Never rename this function: it is the workflow type.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  ParentClosePolicy,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { FetchActivities } from '../activities/index.ts';
import type { ReplayTarget } from '../db/dead-letters/replay.ts';
import { jobTypeOf, workflowIdFor } from '../contract/business-key.ts';
import type { fetchRunWorkflow } from './fetch-records.ts';
import { statusAtStart } from './outcome.ts';
import { childRunPriority, childRunType } from './run-type.ts';
import {
  MAX_REPLAY_LETTERS,
  MAX_REPLAY_RATE,
  pauseReplaySignal,
  type ReplayInput,
  type ReplayProgress,
  replayProgressQuery,
  type ReplayReport,
  resumeReplaySignal,
} from './replay-api.ts';
import { RETRY_PRESETS } from '../contract/retry-presets.ts';

const db = proxyActivities<
  Pick<FetchActivities, 'reserveDeadLetters' | 'markReplayed' | 'releaseDeadLetters' | 'replayCounts'>
>(RETRY_PRESETS.database);

const FETCH_SOURCE = { name: 'FetchSource', type: 'KEYWORD' } as const;
const FETCH_DATE = { name: 'FetchDate', type: 'KEYWORD' } as const;
const JOB_TYPE = { name: 'JobType', type: 'KEYWORD' } as const;
const FETCH_STATUS = { name: 'FetchStatus', type: 'KEYWORD' } as const;

export async function replayDeadLettersWorkflow(input: ReplayInput): Promise<ReplayReport> {
  if (!(input.ratePerSecond > 0 && input.ratePerSecond <= MAX_REPLAY_RATE)) {
    throw ApplicationFailure.nonRetryable(`rate must be in (0, ${MAX_REPLAY_RATE}]`, 'InvalidInput');
  }
  const startedAt = new Date().toISOString(); // workflow time: deterministic
  const intervalMs = Math.ceil(1000 / input.ratePerSecond);
  const progress: ReplayProgress = {
    total: 0,
    started: 0,
    succeeded: 0,
    failed: 0,
    suppressed: 0,
    paused: false,
    ratePerSecond: input.ratePerSecond,
    observedRate: 0,
    phase: 'reserving',
  };
  const startTimes: number[] = [];
  setHandler(replayProgressQuery, () => {
    const now = Date.now();
    const recent = startTimes.filter((t) => now - t <= 10_000).length;
    return { ...progress, observedRate: Math.round((recent / 10) * 100) / 100 };
  });
  setHandler(pauseReplaySignal, () => {
    progress.paused = true;
  });
  setHandler(resumeReplaySignal, () => {
    progress.paused = false;
  });

  const outcomes: Promise<void>[] = [];
  let targets: ReplayTarget[] = [];
  let cancelled = false;
  let next = 0;
  try {
    targets = await db.reserveDeadLetters({
      replayId: input.replayId,
      filter: input.filter,
      max: Math.min(input.max, MAX_REPLAY_LETTERS),
    });
    progress.total = targets.length;
    progress.phase = 'starting';
    for (; next < targets.length; next++) {
      if (next > 0) await sleep(intervalMs);
      // After the timer: a pause that arrived while waiting holds this start too.
      await condition(() => !progress.paused);
      const target = targets[next] as ReplayTarget;
      const outcome = await restart(input, target);
      if (outcome === 'suppressed') {
        progress.suppressed++;
        continue;
      }
      startTimes.push(Date.now());
      progress.started++;
      outcomes.push(
        outcome.result.then(
          () => void progress.succeeded++,
          () => void progress.failed++,
        ),
      );
    }
    progress.phase = 'waiting';
    // The runs are not cancelled with the replay: only the waiting for them is.
    await Promise.race([Promise.all(outcomes), CancellationScope.current().cancelRequested]);
  } catch (err) {
    if (!isCancellation(err)) {
      // Failing for good: letters not started go back to open, never stay reserved.
      await CancellationScope.nonCancellable(() => db.releaseDeadLetters({ replayId: input.replayId }));
      throw err;
    }
    cancelled = true;
  }

  // Reporting runs even when the replay was cancelled: the operator needs the numbers.
  return CancellationScope.nonCancellable(async () => {
    progress.phase = 'reporting';
    const notStarted = cancelled ? await db.releaseDeadLetters({ replayId: input.replayId }) : 0;
    const counts = await db.replayCounts({ fetchRunIds: targets.map((t) => t.fetchRunId), since: startedAt });
    progress.phase = 'done';
    return {
      replayId: input.replayId,
      total: targets.length,
      replayed: progress.started,
      succeeded: progress.succeeded,
      stillFailing: progress.failed,
      suppressed: progress.suppressed,
      notStarted,
      ...counts,
      cancelled,
      startedAt,
      finishedAt: new Date().toISOString(),
    };
  });
}

/**
 * Starts the business-key workflow of one letter again (allowed after a failure, refused while it
 * runs or after it succeeded: then the letter is `suppressed`) and records it on the letter.
 * Returns the run's outcome, settled when it ends.
 */
async function restart(
  input: ReplayInput,
  target: ReplayTarget,
): Promise<{ result: Promise<unknown> } | 'suppressed'> {
  const key = { jobType: jobTypeOf(target), sourceId: target.sourceId, businessDate: target.businessDate };
  // Not cancellable: a run that was started is always recorded on its letter, and a cancel of the
  // replay never reaches the runs it started.
  return CancellationScope.nonCancellable(async () => {
    try {
      const child = await startChild<typeof fetchRunWorkflow>(childRunType(), {
        workflowId: workflowIdFor(key),
        args: [
          {
            ...(target.jobType === undefined ? {} : { jobType: target.jobType }),
            sourceId: target.sourceId,
            businessDate: target.businessDate,
            correlationId: `replay:${input.replayId}`,
            requestedBy: 'replay',
          },
        ],
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
        // The source as fairness key, as every starter gives it (R8).
        ...childRunPriority(target.sourceId),
        // The runs outlive a cancelled replay; the replay only stops starting new ones.
        parentClosePolicy: ParentClosePolicy.ABANDON,
        typedSearchAttributes: [
          { key: FETCH_SOURCE, value: target.sourceId },
          { key: FETCH_DATE, value: target.businessDate },
          { key: JOB_TYPE, value: key.jobType },
          // Shown from the start, as every starter does (the run then has no upsert to make).
          { key: FETCH_STATUS, value: statusAtStart() },
        ],
      });
      await db.markReplayed({
        replayId: input.replayId,
        deadLetterId: target.deadLetterId,
        actor: input.actor,
        outcome: 'started',
        workflowRunId: child.firstExecutionRunId,
      });
      // Wrapped: an async function returning a promise would wait for the run to end.
      return { result: child.result() };
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      await db.markReplayed({
        replayId: input.replayId,
        deadLetterId: target.deadLetterId,
        actor: input.actor,
        outcome: 'suppressed',
      });
      return 'suppressed';
    }
  });
}
