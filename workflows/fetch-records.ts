/**
 * The `fetchRunWorkflow`: one run of a job (any job type: the job's code runs in the activities)
 * for one business key. Workflow id `fetch/<jobType>/<sourceId>/<date>`. Registered under two
 * workflow types, one function: `fetchRunWorkflow`, which every starter uses, and
 * `fetchRecordsWorkflow`, its name from when it ran one job only, which runs started before the
 * rename still carry (run-type.ts). Never drop or rename either export.
 */
import {
  CancellationScope,
  condition,
  continueAsNew,
  ContinueAsNew,
  defineSignal,
  isCancellation,
  log,
  CancelledFailure,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { outlastingOutages } from './database-outage.ts';
import { dbSteps } from './db-steps.ts';
import { RUN_ENDED } from '../contract/error-types.ts';
import { refuseInvalidInput } from './invalid-input.ts';
import { ensureStatus, errorOf, setStatus } from './outcome.ts';
import { partnerFetches } from './partner-dispatch.ts';
import { finish } from './run-end.ts';
import { deadlineFrom, withinDeadline } from './run-deadline.ts';
import { submitSummary } from './submit-summary.ts';
import {
  type FetchRecordsInput,
  type FetchRecordsResult,
  type ResumeState,
  SOURCE_RESUMED_SIGNAL,
} from '../contract/types.ts';

/** Default number of pages per workflow execution before continue-as-new. */
export const DEFAULT_PAGES_PER_EXECUTION = 50;

/**
 * claimRun → (fetchPage → storePage)* → completeRun. A second workflow for a business key that
 * another workflow owns ends at once as a visible `duplicate`, with no side effects (R6).
 */
export async function fetchRunWorkflow(input: FetchRecordsInput): Promise<FetchRecordsResult> {
  // Before anything else: a start from the Web UI or the Temporal CLI skips the client's checks.
  await refuseInvalidInput(input);
  return takeUp(input, false);
}

/**
 * The run workflow's type before it was named for any job: the same function, registered under
 * its old name so that the worker keeps running (and replaying) executions started as
 * `fetchRecordsWorkflow`. Start new runs as {@link fetchRunWorkflow}.
 */
export const fetchRecordsWorkflow = fetchRunWorkflow;

/** The run of one execution: from its resume state, or from a claim (`retaken`: a second claim). */
async function takeUp(input: FetchRecordsInput, retaken: boolean): Promise<FetchRecordsResult> {
  const info = workflowInfo();
  listenForResume();
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
      outlastingOutages('claimRun', () =>
        dbSteps().claimRun({
          ...(input.jobType === undefined ? {} : { jobType: input.jobType }),
          sourceId: input.sourceId,
          businessDate: input.businessDate,
          workflowId: info.workflowId,
          workflowRunId: info.runId,
          correlationId: input.correlationId,
          requestedBy: input.requestedBy,
          scheduledAt: input.scheduledAt ?? info.runStartTime.toISOString(),
        }),
      ),
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
      jobType: claim.jobType,
      fetchRunId: claim.fetchRunId,
      leaseToken: claim.leaseToken,
      cursor: claim.cursor,
      pagesStored: claim.pagesStored,
      recordsStored: claim.recordsStored,
      pageSize: input.pageSize ?? claim.pageSize,
      retryPolicy: claim.retryPolicy,
      round: claim.attempt,
      submitSummary: claim.submitSummary,
      ...(claim.downstreamAction === undefined ? {} : { downstreamAction: claim.downstreamAction }),
      ...deadlineFrom(claim.maxRunTimeMs),
      ...(claim.partnerQueue === undefined ? {} : { partnerQueue: claim.partnerQueue }),
      ...(claim.partnerWeight === undefined ? {} : { partnerWeight: claim.partnerWeight }),
      ...(claim.localFetch === undefined ? {} : { localFetch: claim.localFetch }),
    };
    // Its starter shows a run `running` from its start (an earlier build's starters, `queued`).
    ensureStatus('running');
    pausedAtStart = claim.sourcePaused;
  }
  try {
    if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('run cancelled');
    return await withinDeadline(state.deadlineAt, () => fetchAndStore(input, state, pausedAtStart));
  } catch (err) {
    // continueAsNew() ends this execution by throwing: the run goes on, nothing to record — unless
    // a cancel came in the same workflow task (the next execution would never hear of it).
    const continuing = err instanceof ContinueAsNew;
    if (continuing && !(CancellationScope.current().consideredCancelled && patched(CANCEL_BEFORE_CONTINUE))) {
      throw err;
    }
    // Started from an earlier point of its history than the run's end (a Web UI Reset of a
    // continued-as-new execution, or to a task before the end), this execution finds the run
    // ended under its own claim: it claims the run anew, as a first execution would. A succeeded
    // run is reported as such; a failed or cancelled one runs again from its stored pages.
    if (!continuing && !retaken && endedUnderThisClaim(err) && patched(RETAKE_ENDED_RUN)) {
      const { resume: _, ...fresh } = input;
      return await takeUp(fresh, true);
    }
    // A cancel that lands while the step it waited on fails another way (a partner timeout firing
    // as the cancellation is delivered) is still a cancel: what the operator asked for decides.
    const cancelled =
      continuing ||
      isCancellation(err) ||
      (CancellationScope.current().consideredCancelled && patched(CANCEL_WINS));
    const succeeded = await finish(input, state, err, cancelled);
    if (succeeded) return { status: 'succeeded', fetchRunId: state.fetchRunId, ...succeeded };
    if (!cancelled || isCancellation(err)) throw err;
    throw new CancelledFailure('run cancelled', [], err instanceof Error && !continuing ? err : undefined);
  }
}

/** The run's job type for an activity's input (none in state written before jobs were plug-ins). */
function jobOf(state: ResumeState): { jobType?: string } {
  return state.jobType === undefined ? {} : { jobType: state.jobType };
}

/** Patch id: histories recorded before it recorded such a run as failed. */
const CANCEL_WINS = 'cancel-wins-over-step-failure';

/** Patch id: histories recorded before it failed an execution that found its run ended. */
const RETAKE_ENDED_RUN = 'retake-run-ended-under-this-claim';

/** A LeaseLost whose run ended under this execution's own lease token. */
function endedUnderThisClaim(err: unknown): boolean {
  const { errorType, errorCode } = errorOf(err);
  return errorType === 'LeaseLost' && errorCode === RUN_ENDED;
}

/** Patch id: histories recorded before it continued as new over a cancel of the same task. */
const CANCEL_BEFORE_CONTINUE = 'cancel-before-continue-as-new';

/** The page loop of one execution: fetch → store until done, then complete (or continue as new). */
async function fetchAndStore(
  input: FetchRecordsInput,
  start: ResumeState,
  pausedAtStart: boolean,
): Promise<FetchRecordsResult> {
  let state = start;
  const partner = partnerFetches(input.sourceId, state);

  const pagesPerExecution = Math.max(1, input.pagesPerExecution ?? DEFAULT_PAGES_PER_EXECUTION);
  let pagesThisExecution = 0;
  if (pausedAtStart) await waitWhilePaused(input, state);
  // Finished once at least one page is stored and the partner has no next cursor.
  while (state.pagesStored === 0 || state.cursor !== null) {
    if (pagesThisExecution >= pagesPerExecution || workflowInfo().continueAsNewSuggested) {
      return continueAsNew<typeof fetchRunWorkflow>({ ...input, resume: state });
    }
    const page = await outlastingOutages(
      'fetchPage',
      (rerun) =>
        partner.fetchPage({
          ...jobOf(state),
          fetchRunId: state.fetchRunId,
          leaseToken: state.leaseToken,
          sourceId: input.sourceId,
          businessDate: input.businessDate,
          pageNo: state.pagesStored,
          cursor: state.cursor,
          pageSize: state.pageSize,
          ...(rerun ? { rerun } : {}),
        }),
      { status: 'running' },
    );
    const stored = await outlastingOutages('storePage', () =>
      dbSteps().storePage({
        ...jobOf(state),
        fetchRunId: state.fetchRunId,
        leaseToken: state.leaseToken,
        sourceId: input.sourceId,
        businessDate: input.businessDate,
        pageNo: state.pagesStored,
        recordCount: page.recordCount,
        nextCursor: page.nextCursor,
      }),
    );
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
    outlastingOutages('completeRun', () =>
      dbSteps().completeRun({
        ...jobOf(state),
        fetchRunId: state.fetchRunId,
        leaseToken: state.leaseToken,
        sourceId: input.sourceId,
        businessDate: input.businessDate,
      }),
    ),
  );
  setStatus('succeeded');
  log.info('run succeeded', { pages: done.pages, records: done.records });
  return { status: 'succeeded', fetchRunId: state.fetchRunId, pages: done.pages, records: done.records };
}

// A run waiting, durably, while an operator has its source paused (R11 "pause consumption"): at a
// page boundary, with nothing in flight.

/**
 * How often a run paused at a page boundary asks whether its source was resumed (a signal is
 * prompter). Each check renews the run's lease: keep DURABLE_FETCH_LEASE_TTL_MS well above it.
 */
export const PAUSE_CHECK_INTERVAL = '1 minute';
const sourceResumed = defineSignal(SOURCE_RESUMED_SIGNAL);

// Per execution: Temporal gives every workflow execution its own module globals.
let resumeSignalled = false;

/** Registers the `sourceResumed` handler of this execution (a signal sent before it is buffered). */
export function listenForResume(): void {
  setHandler(sourceResumed, () => {
    resumeSignalled = true;
  });
}

/**
 * Waits while the source is paused. Goes on when `sources resume` signals, or a periodic check
 * (which also keeps the run's lease) finds the pause lifted. A cancel ends the wait, and the run,
 * as `cancelled`.
 */
export async function waitWhilePaused(input: FetchRecordsInput, state: ResumeState): Promise<void> {
  const fence = { fetchRunId: state.fetchRunId, leaseToken: state.leaseToken, sourceId: input.sourceId };
  // Reset before each check, never after: a resume signalled while a check is in flight is kept.
  resumeSignalled = false;
  const checkPause = () => outlastingOutages('checkSourcePause', () => dbSteps().checkSourcePause(fence));
  let check = await checkPause();
  if (!check.paused) return;
  setStatus('paused');
  log.info('source paused: waiting at a page boundary', { pagesStored: state.pagesStored });
  while (check.paused) {
    if (workflowInfo().continueAsNewSuggested) {
      // A long pause must not outgrow the history: go on waiting in a fresh execution.
      await continueAsNew<typeof fetchRunWorkflow>({
        ...input,
        resume: { ...state, waitingForResume: true },
      });
    }
    await condition(() => resumeSignalled, PAUSE_CHECK_INTERVAL);
    resumeSignalled = false;
    check = await checkPause();
  }
  setStatus('running');
  log.info('source resumed: going on', { pagesStored: state.pagesStored });
}
