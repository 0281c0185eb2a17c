/**
 * The activities of the engine, built from injected dependencies (database, jobs, HTTP, clock), so
 * that a test builds them on its own database and partner. Returned as a plain object, ready for
 * Worker.create({ activities }).
 */
import { createCheckSourcePause } from './run/check-pause.ts';
import { createClaimRun } from './run/claim-run.ts';
import { createCompleteRun } from './run/complete-run.ts';
import type { ActivityDeps } from './deps.ts';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { classify } from './errors.ts';
import { withRetryTiming } from './retry/timing.ts';
import { markAttemptStarted, markRetryWait } from './retry/wait.ts';
import { createFetchPage } from './pages/fetch-page.ts';
import { createDownstreamActivities } from './downstream/index.ts';
import { createFinishRun } from './run/finish-run.ts';
import { createRecordInvalidStart } from './run/invalid-start.ts';
import { contextualLogger } from './log-context.ts';
import { createReplayActivities } from './dead-letters/replay.ts';
import { createStorePage } from './pages/store-page.ts';
import { errorTypeLabel } from '../runtime/metrics/metrics.ts';

export type { ActivityDeps } from './deps.ts';

/**
 * Every activity throws a typed ApplicationFailure for what it can classify (e.g. a dropped
 * database connection becomes DatabaseUnavailable), never an error named after its JS class, and
 * a retryable one carries its jittered (or Retry-After) delay, or becomes DeadlineExceeded. A step
 * of a run shows R1's state on the run's row: `retry_wait` until its next attempt, which sets it
 * back to `running` (activities/retry/wait.ts).
 */
function classified<A extends unknown[], R>(
  deps: ActivityDeps,
  name: string,
  fn: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args) => {
    await markAttemptStarted(deps, args[0]);
    try {
      return await fn(...args);
    } catch (err) {
      const thrown = withRetryTiming(classify(err, name), Date.now(), Math.random, stepDeadlineOf(args[0]));
      if (!(thrown instanceof ApplicationFailure)) throw thrown;
      const retried = !thrown.nonRetryable && willRetry();
      if (retried)
        deps.metrics.activityRetries.inc({
          activity: name,
          error_type: errorTypeLabel(thrown.type ?? 'Internal'),
        });
      // Written before Temporal hears of the failure, so before the next attempt can start. A
      // step the breaker held back to its last attempt waits too: the workflow runs it again.
      if (retried || thrown.type === 'CircuitOpen') await markRetryWait(deps, args[0], thrown);
      throw thrown;
    }
  };
}

/** The step deadline a local fetch's input carries (FetchPageInput.stepDeadlineMs), if any. */
function stepDeadlineOf(input: unknown): number | undefined {
  const ms = (input as { stepDeadlineMs?: unknown } | null | undefined)?.stepDeadlineMs;
  return typeof ms === 'number' && Number.isFinite(ms) ? ms : undefined;
}

/** Whether Temporal will try the current activity again after a retryable failure. */
function willRetry(): boolean {
  try {
    const { attempt, retryPolicy } = Context.current().info;
    return !retryPolicy?.maximumAttempts || attempt < retryPolicy.maximumAttempts;
  } catch {
    return false; // called outside an activity (a direct call in a test)
  }
}

/**
 * Builds every activity the worker registers; names are the activity type names in Temporal.
 * `deps.log` lines logged during an activity execution carry its run's ids (activities/log-context.ts).
 */
export function createActivities(baseDeps: ActivityDeps) {
  const deps: ActivityDeps = { ...baseDeps, log: contextualLogger(baseDeps.log) };
  const downstream = { ...createDownstreamActivities(deps), ...createReplayActivities(deps) };
  const wrapped = Object.fromEntries(
    Object.entries(downstream).map(([name, fn]) => [
      name,
      classified(deps, name, fn as (...a: unknown[]) => Promise<unknown>),
    ]),
  ) as typeof downstream;
  return {
    ...wrapped,
    claimRun: classified(deps, 'claimRun', createClaimRun(deps)),
    fetchPage: classified(deps, 'fetchPage', createFetchPage(deps)),
    storePage: classified(deps, 'storePage', createStorePage(deps)),
    completeRun: classified(deps, 'completeRun', createCompleteRun(deps)),
    finishRun: classified(deps, 'finishRun', createFinishRun(deps)),
    checkSourcePause: classified(deps, 'checkSourcePause', createCheckSourcePause(deps)),
    recordInvalidStart: classified(deps, 'recordInvalidStart', createRecordInvalidStart(deps)),
  };
}

export type FetchActivities = ReturnType<typeof createActivities>;
