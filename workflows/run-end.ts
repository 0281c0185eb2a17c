/**
 * How a fetch-records run that did not succeed ends (R1, R11): its row records `cancelled` or
 * `dead_lettered` (with a dead letter), then the compensation of what it left downstream starts.
 * Both retry until the database is back, however long that takes: a workflow never closes while
 * its row still says `running`.
 */
import {
  CancellationScope,
  log,
  ParentClosePolicy,
  patched,
  proxyActivities,
  startChild,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { FetchActivities } from '../activities/index.ts';
import { compensationWorkflowIdFor, jobTypeOf } from '../contract/business-key.ts';
import { compensateRunWorkflow } from './compensate-run.ts';
import { errorOf, setStatus } from './outcome.ts';
import { RETRY_PRESETS } from '../contract/retry-presets.ts';
import type { FetchRecordsInput, ResumeState } from '../contract/types.ts';

const record = proxyActivities<Pick<FetchActivities, 'finishRun' | 'pendingCompensations'>>(
  RETRY_PRESETS.recordOutcome,
);

/** Patch id: histories recorded before it ended a run whose row had succeeded as cancelled or failed. */
const SUCCEEDED_ROW_DECIDES = 'succeeded-row-decides';

/**
 * Records how the run ended when it did not succeed: `cancelled` (a cancel from the CLI, the app
 * or the Web UI), or `dead_lettered` with the error type. Runs even when the workflow is being
 * cancelled, so that the row never stays `running`. Then starts the compensation when the run
 * left downstream effects to undo or reconcile.
 *
 * Returns the run's totals instead when its row had already succeeded under this claim: the
 * workflow task that ran `completeRun` (a local activity) committed it and then failed — a cancel
 * that arrived while it ran makes the server refuse its completion — so the execution, replayed
 * with the cancel first, never saw it. The row decides: the run succeeded, its downstream action
 * stays as it ended, and the workflow reports success.
 */
export async function finish(
  input: FetchRecordsInput,
  state: ResumeState,
  err: unknown,
  cancelled: boolean,
): Promise<{ pages: number; records: number } | undefined> {
  const status = cancelled ? 'cancelled' : 'dead_lettered';
  const rowDecides = patched(SUCCEEDED_ROW_DECIDES);
  if (!rowDecides) setStatus(status);
  let succeeded: { pages: number; records: number } | undefined;
  try {
    const ended = await CancellationScope.nonCancellable(() =>
      record.finishRun({
        fetchRunId: state.fetchRunId,
        leaseToken: state.leaseToken,
        status,
        ...(cancelled ? {} : errorOf(err)),
      }),
    );
    if (rowDecides) succeeded = ended.succeeded;
  } catch (finishErr) {
    // Only a non-retryable failure gets here (a bug): the stuck-run sweep settles the row later.
    log.error('could not record how the run ended', {
      fetchRunId: state.fetchRunId,
      error: String(finishErr),
    });
  }
  if (succeeded) {
    setStatus('succeeded');
    log.info(`run succeeded before its end could be recorded as ${status}`, { ...succeeded });
    return succeeded;
  }
  if (rowDecides) setStatus(status);
  if (state.submitSummary) await startCompensation(input, state, cancelled);
  return undefined;
}

/**
 * Starts the compensation workflow of this claim when it has actions to settle. It outlives this
 * workflow (parent close policy ABANDON) and has its own id, derived from the business key.
 */
async function startCompensation(input: FetchRecordsInput, state: ResumeState, cancelled: boolean) {
  const round = state.round ?? 1;
  const workflowId = compensationWorkflowIdFor(
    { jobType: jobTypeOf(state), sourceId: input.sourceId, businessDate: input.businessDate },
    round,
  );
  try {
    await CancellationScope.nonCancellable(async () => {
      const pending = await record.pendingCompensations({ fetchRunId: state.fetchRunId, round });
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
