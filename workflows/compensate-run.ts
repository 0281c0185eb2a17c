/**
 * The compensation of one claim of a run (issue #6, R4, R11): started by the run's workflow when
 * it fails for good or is cancelled (from the CLI, the app or the Web UI) and it recorded a
 * downstream action, or by an operator (`durable-fetch compensations retry`). Workflow id
 * `compensate/<jobType>/<sourceId>/<date>`. Never rename this function: it is the workflow type.
 *
 * Actions are undone latest first. An action whose outcome is unknown is reconciled first (looked
 * up at the partner): nothing there means nothing to undo. Each step has its own retry preset;
 * one that exhausts it is not swallowed: the action becomes `needs_manual` and the others go on.
 * The run ends `compensated` once every action of it is settled.
 */
import { isCancellation, log, proxyActivities } from '@temporalio/workflow';
import type { FetchActivities } from '../activities/index.ts';
import { errorOf, setStatus } from './outcome.ts';
import { RETRY_PRESETS } from './retry-presets.ts';
import type { CompensateRunInput, CompensateRunResult } from './types.ts';

const db = proxyActivities<
  Pick<FetchActivities, 'pendingCompensations' | 'markNeedsManual' | 'settleCompensatedRun'>
>(RETRY_PRESETS.database);
const lookup = proxyActivities<Pick<FetchActivities, 'reconcileDownstream'>>(RETRY_PRESETS.reconcileLookup);
const undo = proxyActivities<Pick<FetchActivities, 'compensateDownstream'>>(RETRY_PRESETS.compensation);

export async function compensateRunWorkflow(input: CompensateRunInput): Promise<CompensateRunResult> {
  setStatus('compensating');
  const actions = await db.pendingCompensations({ fetchRunId: input.fetchRunId, round: input.round });
  const result = { compensated: 0, notApplied: 0, needsManual: 0 };
  for (const action of actions) {
    try {
      if (action.partnerId === null || action.state === 'attempting' || action.state === 'unknown') {
        const found = await lookup.reconcileDownstream({ actionId: action.actionId, onAbsent: 'settle' });
        if (!found.found) {
          result.notApplied++;
          continue;
        }
        if (found.partnerState === 'voided') {
          result.compensated++;
          continue;
        }
      }
      const done = await undo.compensateDownstream({ actionId: action.actionId });
      if (done.state === 'compensated') result.compensated++;
      else if (done.state === 'not_applied') result.notApplied++;
    } catch (err) {
      // Cancelling the compensation itself leaves its rows as they are, visible to operators.
      if (isCancellation(err)) throw err;
      const { errorType, errorMessage } = errorOf(err);
      log.warn('compensation step exhausted its budget', { actionId: action.actionId, errorType });
      await db.markNeedsManual({ actionId: action.actionId, errorType, errorMessage });
      result.needsManual++;
    }
  }
  const { status } = await db.settleCompensatedRun({ fetchRunId: input.fetchRunId });
  setStatus(status === 'compensated' ? 'compensated' : 'needs_manual');
  return { ...result, runStatus: status };
}
