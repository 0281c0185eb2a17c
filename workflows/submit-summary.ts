/**
 * A job's non-idempotent downstream action, run by `fetchRunWorkflow` after its last page
 * (the activity names are the demo job's, kept for the histories that hold them): submit, then
 * confirm. Recorded in the compensation ledger before and
 * after the call. An unknown outcome is reconciled (looked up by reference, once the call can no
 * longer take effect) before anything else: found → recorded and confirmed; not found → called
 * again, at most {@link MAX_SUBMIT_CALLS} times in all; the lookup failing past its budget →
 * `needs_manual` and the run fails. An earlier claim's action (the run was reset, or taken up
 * again) is settled first: adopted when it took effect, so the run never submits twice.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  sleep,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { FetchActivities } from '../activities/index.ts';
import { outlastingOutages } from './database-outage.ts';
import { dbSteps } from './db-steps.ts';
import { errorOf } from './outcome.ts';
import { LOCAL_FETCH_RETRY_THRESHOLD_MS, RETRY_PRESETS } from '../contract/retry-presets.ts';
import { lookUpUntilSettled } from './settle-lookup.ts';
import {
  type DownstreamActionView,
  type FetchRecordsInput,
  type ReconcileActionInput,
  type ReconcileActionResult,
  type ResumeState,
  SUBMIT_SUMMARY,
} from '../contract/types.ts';

type Confirm = Pick<FetchActivities, 'confirmSubmission'>;

/** The non-idempotent call, and the repeat-safe one. */
const submit = proxyActivities<Pick<FetchActivities, 'submitSummary'>>(RETRY_PRESETS.downstreamSubmit);
const confirm = proxyActivities<Confirm>(RETRY_PRESETS.downstreamCall);

/**
 * The confirm of a run whose page fetches are local (workflows/partner-dispatch.ts): a local
 * activity too, in the worker that holds the workflow task, with no activity task to schedule,
 * poll, start and complete. Safe as one: the confirm is repeat-safe by the partner's id and fenced
 * by the run's lease in the activity, so an attempt run again (its worker died, its answer was
 * lost) confirms the same submission again or is refused. The non-idempotent submit stays an
 * activity task: its heartbeat is what times a frozen attempt out while its call's outcome is
 * unknown, and each of its attempts is an event the Web UI shows.
 */
const localConfirm = (() => {
  const { startToCloseTimeout, scheduleToCloseTimeout, retry, cancellationType } =
    RETRY_PRESETS.downstreamCall;
  return proxyLocalActivities<Confirm>({
    startToCloseTimeout,
    scheduleToCloseTimeout,
    retry,
    cancellationType,
    // A longer wait before a retry is a durable timer: an outage of the downstream holds no
    // workflow task open while it lasts (and a stopping worker's WorkerShutdown waits on one).
    localRetryThreshold: LOCAL_FETCH_RETRY_THRESHOLD_MS,
  });
})();

/** Patch id: histories recorded before it confirmed as an activity task whatever the fetches were. */
export const LOCAL_CONFIRM = 'downstream-confirm-local';

/** The confirm of this run: local with its page fetches (a claim of this build or later says so). */
function confirmOf(state: ResumeState): Confirm {
  return state.localFetch === true && patched(LOCAL_CONFIRM) ? localConfirm : confirm;
}

/** Wait between an unknown outcome and the first lookup that settles it. */
export const RECONCILE_SETTLE = '2 seconds';

/** Calls of the non-idempotent submit a run makes at most, each after a lookup found nothing. */
export const MAX_SUBMIT_CALLS = 3;

/** How often a claim asks again while an earlier claim's compensation is voiding its action. */
const EARLIER_COMPENSATION_POLL = '10 seconds';

/** Times a claim settles an earlier claim's action before it gives up (about 10 minutes). */
const MAX_EARLIER_CHECKS = 60;

/** Submits and confirms the run's summary (see the module comment). */
export async function submitSummary(input: FetchRecordsInput, state: ResumeState): Promise<void> {
  const run = { fetchRunId: state.fetchRunId, leaseToken: state.leaseToken, sourceId: input.sourceId };
  const intent = await currentIntent(input, state);
  const actionId = intent.actionId;
  let partnerId = intent.partnerId;
  let attempts = intent.attempts;
  let last = { errorType: 'UpstreamUnavailable', errorMessage: 'no call made' };
  // Calls counted that this execution did not see the end of (an execution the run was reset
  // from made them): their outcome is unknown, so look first, never call blindly on top of them.
  if (partnerId === null && attempts > 0 && patched(COUNTED_CALLS_FIRST)) {
    const settled = await reconcile(actionId, 'retry');
    if (settled.found) partnerId = settled.partnerId;
    else attempts = settled.attempts;
  }
  for (let unknowns = 0; partnerId === null;) {
    if (attempts >= MAX_SUBMIT_CALLS || unknowns >= MAX_UNKNOWN_OUTCOMES) {
      throw ApplicationFailure.nonRetryable(
        `downstream submission failed ${attempts} times (${last.errorMessage})`,
        last.errorType,
      );
    }
    try {
      ({ partnerId } = await outlastingOutages('submitSummary', () =>
        submit.submitSummary({ ...run, actionId, expectedAttempts: attempts }),
      ));
    } catch (err) {
      if (!outcomeUnknown(err)) throw err;
      last = errorOf(err);
      unknowns++;
      // Let a request the partner may still be processing land before asking what exists.
      await sleep(RECONCILE_SETTLE);
      const settled = await reconcile(actionId, 'retry');
      if (settled.found) partnerId = settled.partnerId;
      else attempts = settled.attempts;
    }
  }
  const confirmer = confirmOf(state);
  await outlastingOutages('confirmSubmission', () => confirmer.confirmSubmission({ ...run, actionId }));
}

/**
 * Unknown outcomes a run settles at most before it gives up: attempts that time out before they
 * even count their call (a worker freezing before it sends) leave the call count unchanged.
 */
const MAX_UNKNOWN_OUTCOMES = 10;

/** Patch id: histories recorded before it called again on top of calls an earlier execution counted. */
const COUNTED_CALLS_FIRST = 'reconcile-counted-calls-first';

/** Patch id: histories recorded before it failed the run when the submit activity timed out. */
const TIMEOUT_IS_UNKNOWN = 'submit-timeout-is-unknown';

/**
 * Whether the submit's failure leaves its effect unknown: the activity says so (OutcomeUnknown),
 * or Temporal timed it out — its attempts may have called the partner (e.g. a frozen worker's open
 * polls took the retries until their heartbeats timed out).
 */
function outcomeUnknown(err: unknown): boolean {
  const type = errorOf(err).errorType;
  if (type === 'OutcomeUnknown') return true;
  const timedOut = err instanceof ActivityFailure && err.cause instanceof TimeoutFailure;
  return timedOut && patched(TIMEOUT_IS_UNKNOWN);
}

/**
 * This claim's action: its own intent row, written now if need be, after settling any action an
 * earlier claim of the run left unsettled — adopted when it took effect (confirmed, or found by a
 * lookup), `not_applied` when a lookup after its settle window finds nothing, waited for while that
 * claim's compensation voids it. An action waiting for an operator fails the run (the activity
 * says so with EARLIER_ACTION_UNSETTLED).
 */
async function currentIntent(input: FetchRecordsInput, state: ResumeState): Promise<DownstreamActionView> {
  const fence = { fetchRunId: state.fetchRunId, leaseToken: state.leaseToken };
  const round = state.round ?? 1;
  for (let checks = 0; ; checks++) {
    // Not cancellable: a cancel must find the intent either written or not, never in flight, so
    // that the compensation started right after sees every row this run wrote.
    const intent = await CancellationScope.nonCancellable(() =>
      outlastingOutages('recordDownstreamIntent', () =>
        dbSteps().recordDownstreamIntent({
          ...(state.jobType === undefined ? {} : { jobType: state.jobType }),
          ...fence,
          sourceId: input.sourceId,
          businessDate: input.businessDate,
          round,
          action: actionOf(state),
          step: 1,
          settleEarlier: true,
        }),
      ),
    );
    if (intent.kind !== 'earlier') return intent;
    const earlier = intent.action;
    if (checks >= MAX_EARLIER_CHECKS) {
      throw ApplicationFailure.create({
        type: 'InvalidInput',
        nonRetryable: true,
        message: `an earlier ${actionOf(state)} of this run (compensation ${earlier.actionId}) is still ${earlier.state}: settle it first (durable-fetch compensations show ${earlier.actionId})`,
        details: [{ code: 'EARLIER_ACTION_UNSETTLED' }],
      });
    }
    if (earlier.state === 'confirmed') {
      await outlastingOutages('adoptDownstreamAction', () =>
        dbSteps().adoptDownstreamAction({ ...fence, actionId: earlier.actionId, round }),
      );
    } else if (earlier.state === 'compensating') {
      await sleep(EARLIER_COMPENSATION_POLL);
    } else {
      // attempting or unknown: found → confirmed (adopted next time round), else not_applied.
      await reconcile(earlier.actionId, 'settle');
    }
  }
}

/** The ledger name of the run's downstream action (state written before jobs: the demo job's). */
function actionOf(state: ResumeState): string {
  return state.downstreamAction ?? SUBMIT_SUMMARY;
}

/** Looks an unknown outcome up until settled; a lookup that keeps failing hands it to a human. */
async function reconcile(
  actionId: string,
  onAbsent: ReconcileActionInput['onAbsent'],
): Promise<ReconcileActionResult> {
  try {
    return await lookUpUntilSettled(actionId, onAbsent);
  } catch (err) {
    if (!isCancellation(err)) {
      await CancellationScope.nonCancellable(() => dbSteps().markNeedsManual({ actionId, ...errorOf(err) }));
    }
    throw err;
  }
}
