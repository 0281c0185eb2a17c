/**
 * The `fetchRecordsWorkflow`: one run of the fetch-records job for one business key.
 * Workflow id `fetch/fetch-records/<sourceId>/<date>`. Never rename this function: it is the
 * workflow type name of every run already in history.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  continueAsNew,
  ContinueAsNew,
  isCancellation,
  log,
  TimeoutFailure,
  CancelledFailure,
  proxyActivities,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { FetchActivities } from '../activities/index.ts';
import { type PartnerPresetName, RETRY_PRESETS } from './retry-presets.ts';
import type { FetchRecordsInput, FetchRecordsResult, ResumeState } from './types.ts';

const db = proxyActivities<Pick<FetchActivities, 'claimRun' | 'storePage' | 'completeRun' | 'finishRun'>>(
  RETRY_PRESETS.database,
);
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
  let state: ResumeState;
  if (input.resume) {
    state = input.resume;
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
    };
    setStatus('running');
  }
  try {
    if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('run cancelled');
    return await fetchAndStore(input, state);
  } catch (err) {
    // continueAsNew() ends this execution by throwing: the run goes on, nothing to record.
    if (!(err instanceof ContinueAsNew)) await finish(state, err);
    throw err;
  }
}

/**
 * Records how the run ended when it did not succeed: `cancelled` (a cancel from the CLI, the
 * app or the Web UI), or `dead_lettered` with the error type. Runs even when the workflow is being
 * cancelled, so that the row never stays `running`.
 */
async function finish(state: ResumeState, err: unknown): Promise<void> {
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
}

/** DESIGN error type and message of what ended a run. Temporal's own timeouts map to DESIGN types. */
function errorOf(err: unknown): { errorType: string; errorMessage: string } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure)
    return { errorType: cause.type ?? 'Internal', errorMessage: cause.message };
  if (cause instanceof TimeoutFailure) {
    const deadline = cause.timeoutType === 'SCHEDULE_TO_CLOSE';
    return {
      errorType: deadline ? 'DeadlineExceeded' : 'Timeout',
      errorMessage: `activity ${deadline ? 'deadline' : 'timeout'} (${cause.timeoutType}) exceeded`,
    };
  }
  return { errorType: 'Internal', errorMessage: cause instanceof Error ? cause.message : String(cause) };
}

/** The page loop of one execution: fetch → store until done, then complete (or continue as new). */
async function fetchAndStore(input: FetchRecordsInput, start: ResumeState): Promise<FetchRecordsResult> {
  let state = start;
  // Resume state written before sources chose presets has none: the default preset then.
  const partner = partners[state.retryPolicy ?? 'partnerHttp'];

  const pagesPerExecution = Math.max(1, input.pagesPerExecution ?? DEFAULT_PAGES_PER_EXECUTION);
  let pagesThisExecution = 0;
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
  return { status: 'succeeded', fetchRunId: state.fetchRunId, pages: done.pages, records: done.records };
}

function setStatus(status: string): void {
  upsertSearchAttributes([{ key: { name: 'FetchStatus', type: 'KEYWORD' }, value: status }]);
}
