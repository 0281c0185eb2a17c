/**
 * A run waiting, durably, while an operator has its source paused (R11 "pause consumption"): at a
 * page boundary, with nothing in flight. Workflow code only.
 */
import { condition, continueAsNew, defineSignal, log, setHandler, workflowInfo } from '@temporalio/workflow';
import { outlastingOutages } from './database-outage.ts';
import { dbSteps } from './db-steps.ts';
import type { fetchRecordsWorkflow } from './fetch-records.ts';
import { setStatus } from './outcome.ts';
import { type FetchRecordsInput, type ResumeState, SOURCE_RESUMED_SIGNAL } from './types.ts';

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
      await continueAsNew<typeof fetchRecordsWorkflow>({
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
