/**
 * The `fetchRecordsWorkflow`: one run of the fetch-records job for one business key.
 * Workflow id `fetch/fetch-records/<sourceId>/<date>`. Never rename this function: it is the
 * workflow type name of every run already in history.
 */
import {
  ApplicationFailure,
  CancellationScope,
  continueAsNew,
  ContinueAsNew,
  isCancellation,
  log,
  CancelledFailure,
  condition,
  defineSignal,
  ParentClosePolicy,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { FetchActivities } from '../activities/index.ts';
import { compensationWorkflowIdFor, FETCH_RECORDS } from './business-key.ts';
import { compensateRunWorkflow } from './compensate-run.ts';
import { errorOf, setStatus } from './outcome.ts';
import { type PartnerPresetName, RETRY_PRESETS } from './retry-presets.ts';
import {
  type FetchRecordsInput,
  type FetchRecordsResult,
  type ReconcileActionResult,
  type ResumeState,
  SOURCE_RESUMED_SIGNAL,
  SUBMIT_SUMMARY,
} from './types.ts';

/**
 * How often a run paused at a page boundary asks whether its source was resumed (a signal is
 * prompter). Each check renews the run's lease: keep DURABLE_FETCH_LEASE_TTL_MS well above it.
 */
export const PAUSE_CHECK_INTERVAL = '1 minute';
const sourceResumed = defineSignal(SOURCE_RESUMED_SIGNAL);

const db = proxyActivities<
  Pick<
    FetchActivities,
    | 'claimRun'
    | 'storePage'
    | 'completeRun'
    | 'finishRun'
    | 'recordDownstreamIntent'
    | 'markNeedsManual'
    | 'pendingCompensations'
    | 'checkSourcePause'
  >
>(RETRY_PRESETS.database);
/** The non-idempotent call, the repeat-safe one, and the lookup that settles unknown outcomes. */
const submit = proxyActivities<Pick<FetchActivities, 'submitSummary'>>(RETRY_PRESETS.downstreamSubmit);
const confirm = proxyActivities<Pick<FetchActivities, 'confirmSubmission'>>(RETRY_PRESETS.downstreamCall);
const lookup = proxyActivities<Pick<FetchActivities, 'reconcileDownstream'>>(RETRY_PRESETS.reconcileLookup);
/** One proxy per partner preset: a source picks its preset by name (`Source.retryPolicy`). */
const partnerProxy = (name: PartnerPresetName) =>
  proxyActivities<Pick<FetchActivities, 'fetchPage'>>(RETRY_PRESETS[name]);
const partners: Record<PartnerPresetName, ReturnType<typeof partnerProxy>> = {
  partnerHttp: partnerProxy('partnerHttp'),
  partnerHttpQuick: partnerProxy('partnerHttpQuick'),
};

/** Default number of pages per workflow execution before continue-as-new. */
export const DEFAULT_PAGES_PER_EXECUTION = 50;

/**
 * claimRun → (fetchPage → storePage)* → completeRun. A second workflow for a business key that
 * another workflow owns ends at once as a visible `duplicate`, with no side effects (R6).
 */
export async function fetchRecordsWorkflow(input: FetchRecordsInput): Promise<FetchRecordsResult> {
  const info = workflowInfo();
  setHandler(sourceResumed, () => {
    resumeSignalled = true;
  });
  let state: ResumeState;
  let pausedAtStart: boolean;
  if (input.resume) {
    const { waitingForResume, ...resumed } = input.resume;
    state = resumed;
    pausedAtStart = waitingForResume ?? false;
  } else {
    // Not cancellable: a claim that commits must be seen, so that a cancel arriving now still
    // ends the claimed row as `cancelled` instead of leaving it `running` under a live lease.
    const claim = await CancellationScope.nonCancellable(() =>
      db.claimRun({
        sourceId: input.sourceId,
        businessDate: input.businessDate,
        workflowId: info.workflowId,
        workflowRunId: info.runId,
        correlationId: input.correlationId,
        requestedBy: input.requestedBy,
        scheduledAt: input.scheduledAt ?? info.runStartTime.toISOString(),
      }),
    );
    if (claim.outcome === 'succeeded') {
      // E.g. a restart after the run committed but before the workflow saw it: report, do nothing.
      setStatus('succeeded');
      return {
        status: 'succeeded',
        fetchRunId: claim.fetchRunId,
        pages: claim.pages,
        records: claim.records,
      };
    }
    if (claim.outcome === 'duplicate') {
      setStatus('duplicate');
      return {
        status: 'duplicate',
        fetchRunId: claim.fetchRunId,
        existingStatus: claim.status,
        ownerWorkflowId: claim.ownerWorkflowId,
      };
    }
    state = {
      fetchRunId: claim.fetchRunId,
      leaseToken: claim.leaseToken,
      cursor: claim.cursor,
      pagesStored: claim.pagesStored,
      recordsStored: claim.recordsStored,
      pageSize: input.pageSize ?? claim.pageSize,
      retryPolicy: claim.retryPolicy,
      round: claim.attempt,
      submitSummary: claim.submitSummary,
    };
    setStatus('running');
    pausedAtStart = claim.sourcePaused;
  }
  try {
    if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('run cancelled');
    return await fetchAndStore(input, state, pausedAtStart);
  } catch (err) {
    // continueAsNew() ends this execution by throwing: the run goes on, nothing to record.
    if (!(err instanceof ContinueAsNew)) await finish(input, state, err);
    throw err;
  }
}

/**
 * Records how the run ended when it did not succeed: `cancelled` (a cancel from the CLI, the
 * app or the Web UI), or `dead_lettered` with the error type. Runs even when the workflow is being
 * cancelled, so that the row never stays `running`. Then starts the compensation when the run
 * left downstream effects to undo or reconcile (issue #6).
 */
async function finish(input: FetchRecordsInput, state: ResumeState, err: unknown): Promise<void> {
  const cancelled = isCancellation(err);
  setStatus(cancelled ? 'cancelled' : 'failed');
  try {
    await CancellationScope.nonCancellable(() =>
      db.finishRun({
        fetchRunId: state.fetchRunId,
        leaseToken: state.leaseToken,
        status: cancelled ? 'cancelled' : 'dead_lettered',
        ...(cancelled ? {} : errorOf(err)),
      }),
    );
  } catch (finishErr) {
    // The run's own failure is what matters; recording it failed too (database down past its
    // deadline): say so, and let the original error end the workflow.
    log.error('could not record how the run ended', {
      fetchRunId: state.fetchRunId,
      error: String(finishErr),
    });
  }
  if (state.submitSummary) await startCompensation(input, state, cancelled);
}

/**
 * Starts the compensation workflow of this claim when it has actions to settle. It outlives this
 * workflow (parent close policy ABANDON) and has its own id, derived from the business key.
 */
async function startCompensation(input: FetchRecordsInput, state: ResumeState, cancelled: boolean) {
  const round = state.round ?? 1;
  const workflowId = compensationWorkflowIdFor(
    { jobType: FETCH_RECORDS, sourceId: input.sourceId, businessDate: input.businessDate },
    round,
  );
  try {
    await CancellationScope.nonCancellable(async () => {
      const pending = await db.pendingCompensations({ fetchRunId: state.fetchRunId, round });
      if (pending.length === 0) return;
      await startChild(compensateRunWorkflow, {
        workflowId,
        args: [
          {
            fetchRunId: state.fetchRunId,
            sourceId: input.sourceId,
            businessDate: input.businessDate,
            round,
            reason: cancelled ? 'cancelled' : 'failed',
          },
        ],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        typedSearchAttributes: workflowInfo().typedSearchAttributes,
      });
      log.info('compensation started', { workflowId, actions: pending.length });
    });
  } catch (startErr) {
    // E.g. an operator's compensation of this claim is running: it settles these rows too.
    log.error('could not start the compensation', { workflowId, error: String(startErr) });
  }
}

/** The page loop of one execution: fetch → store until done, then complete (or continue as new). */
async function fetchAndStore(
  input: FetchRecordsInput,
  start: ResumeState,
  pausedAtStart: boolean,
): Promise<FetchRecordsResult> {
  let state = start;
  // Resume state written before sources chose presets has none: the default preset then.
  const partner = partners[state.retryPolicy ?? 'partnerHttp'];

  const pagesPerExecution = Math.max(1, input.pagesPerExecution ?? DEFAULT_PAGES_PER_EXECUTION);
  let pagesThisExecution = 0;
  if (pausedAtStart) await waitWhilePaused(input, state);
  // Finished once at least one page is stored and the partner has no next cursor.
  while (state.pagesStored === 0 || state.cursor !== null) {
    if (pagesThisExecution >= pagesPerExecution || workflowInfo().continueAsNewSuggested) {
      return continueAsNew<typeof fetchRecordsWorkflow>({ ...input, resume: state });
    }
    const page = await partner.fetchPage({
      fetchRunId: state.fetchRunId,
      leaseToken: state.leaseToken,
      sourceId: input.sourceId,
      businessDate: input.businessDate,
      pageNo: state.pagesStored,
      cursor: state.cursor,
      pageSize: state.pageSize,
    });
    const stored = await db.storePage({
      fetchRunId: state.fetchRunId,
      leaseToken: state.leaseToken,
      sourceId: input.sourceId,
      businessDate: input.businessDate,
      pageNo: state.pagesStored,
      recordCount: page.recordCount,
      nextCursor: page.nextCursor,
    });
    state = {
      ...state,
      cursor: page.nextCursor,
      pagesStored: state.pagesStored + 1,
      recordsStored: state.recordsStored + stored.recordCount,
    };
    pagesThisExecution++;
    // A safe point: the page is stored, the next not yet fetched.
    if (stored.sourcePaused && state.cursor !== null) await waitWhilePaused(input, state);
  }

  if (state.submitSummary) {
    // A safe point too: a paused partner gets no submission either.
    await waitWhilePaused(input, state);
    await submitSummary(input, state);
  }

  // Not cancellable: once completeRun may commit, its answer decides the run's end state.
  const done = await CancellationScope.nonCancellable(() =>
    db.completeRun({
      fetchRunId: state.fetchRunId,
      leaseToken: state.leaseToken,
      sourceId: input.sourceId,
      businessDate: input.businessDate,
    }),
  );
  setStatus('succeeded');
  log.info('run succeeded', { pages: done.pages, records: done.records });
  return { status: 'succeeded', fetchRunId: state.fetchRunId, pages: done.pages, records: done.records };
}

// Per execution: Temporal gives every workflow execution its own module globals.
let resumeSignalled = false;

/**
 * Waits, durably, while an operator has the source paused (issue #7): at a page boundary, with
 * nothing in flight. Goes on when `sources resume` signals, or a periodic check (which also keeps
 * the run's lease) finds the pause lifted. A cancel ends the wait, and the run, as `cancelled`.
 */
async function waitWhilePaused(input: FetchRecordsInput, state: ResumeState): Promise<void> {
  const fence = { fetchRunId: state.fetchRunId, leaseToken: state.leaseToken, sourceId: input.sourceId };
  // Reset before each check, never after: a resume signalled while a check is in flight is kept.
  resumeSignalled = false;
  let check = await db.checkSourcePause(fence);
  if (!check.paused) return;
  setStatus('paused');
  log.info('source paused: waiting at a page boundary', { pagesStored: state.pagesStored });
  while (check.paused) {
    if (workflowInfo().continueAsNewSuggested) {
      // A long pause must not outgrow the history: go on waiting in a fresh execution.
      await continueAsNew<typeof fetchRecordsWorkflow>({
        ...input,
        resume: { ...state, waitingForResume: true },
      });
    }
    await condition(() => resumeSignalled, PAUSE_CHECK_INTERVAL);
    resumeSignalled = false;
    check = await db.checkSourcePause(fence);
  }
  setStatus('running');
  log.info('source resumed: going on', { pagesStored: state.pagesStored });
}

/** Wait between an unknown outcome and the lookup that settles it. */
export const RECONCILE_SETTLE = '2 seconds';

/** Calls of the non-idempotent submit a run makes at most, each after a lookup found nothing. */
export const MAX_SUBMIT_CALLS = 3;

/**
 * The demo job's non-idempotent step (issue #6): submit the run's summary downstream, then
 * confirm it. Recorded in the compensation ledger before and after the call. An unknown outcome
 * is reconciled (looked up by reference) before anything else: found → recorded and confirmed;
 * not found → called again, at most {@link MAX_SUBMIT_CALLS} times in all; the lookup itself
 * failing past its budget → `needs_manual` and the run fails.
 */
async function submitSummary(input: FetchRecordsInput, state: ResumeState): Promise<void> {
  const run = { fetchRunId: state.fetchRunId, leaseToken: state.leaseToken, sourceId: input.sourceId };
  // Not cancellable: a cancel must find the intent either written or not, never in flight, so
  // that the compensation started right after sees every row this run wrote.
  const intent = await CancellationScope.nonCancellable(() =>
    db.recordDownstreamIntent({
      ...run,
      businessDate: input.businessDate,
      round: state.round ?? 1,
      action: SUBMIT_SUMMARY,
      step: 1,
    }),
  );
  const actionId = intent.actionId;
  let partnerId = intent.partnerId;
  let attempts = intent.attempts;
  let last = { errorType: 'UpstreamUnavailable', errorMessage: 'no call made' };
  while (partnerId === null) {
    if (attempts >= MAX_SUBMIT_CALLS) {
      throw ApplicationFailure.nonRetryable(
        `downstream submission failed ${attempts} times (${last.errorMessage})`,
        last.errorType,
      );
    }
    try {
      ({ partnerId } = await submit.submitSummary({ ...run, actionId, expectedAttempts: attempts }));
    } catch (err) {
      if (errorOf(err).errorType !== 'OutcomeUnknown') throw err;
      last = errorOf(err);
      // Let a request the partner may still be processing land before asking what exists.
      await sleep(RECONCILE_SETTLE);
      const settled = await reconcile(actionId);
      if (settled.found) partnerId = settled.partnerId;
      else attempts = settled.attempts;
    }
  }
  await confirm.confirmSubmission({ ...run, actionId });
}

/** Looks an unknown outcome up; a lookup that keeps failing hands the action to a human. */
async function reconcile(actionId: string): Promise<ReconcileActionResult> {
  try {
    return await lookup.reconcileDownstream({ actionId, onAbsent: 'retry' });
  } catch (err) {
    if (!isCancellation(err)) {
      await CancellationScope.nonCancellable(() => db.markNeedsManual({ actionId, ...errorOf(err) }));
    }
    throw err;
  }
}
