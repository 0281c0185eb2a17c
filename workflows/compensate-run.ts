/**
 * The compensation of one claim of a run (R4, R11): started by the run's workflow when it fails
 * for good or is cancelled (from the CLI, the app or the Web UI) and it recorded a downstream
 * action, by the stuck-run sweep, for strays (effects the ledger did not expect, whatever the
 * run's outcome), or by an operator (`durable-fetch compensations retry`). Workflow id
 * `compensate/<jobType>/<sourceId>/<date>/r<round>`. Never rename this function: it is the
 * workflow type.
 *
 * Actions are undone latest first. An action whose outcome is unknown is reconciled first (looked
 * up at the partner once its last call can no longer take effect): nothing there means nothing to
 * undo. Each step has its own retry preset; one that exhausts it is not swallowed: the action
 * becomes `needs_manual` and the others go on. A lookup may find strays, which join the work. The
 * run ends `compensated` once every action of it is settled.
 */
import { isCancellation, log, patched, proxyActivities } from '@temporalio/workflow';
import type { FetchActivities } from '../activities/index.ts';
import { errorOf, setStatus } from './outcome.ts';
import { outlastingOutages } from './database-outage.ts';
import { RETRY_PRESETS } from '../contract/retry-presets.ts';
import { lookUpUntilSettled } from './settle-lookup.ts';
import type { CompensateRunInput, CompensateRunResult, DownstreamActionView } from '../contract/types.ts';

const db = proxyActivities<
  Pick<FetchActivities, 'pendingCompensations' | 'markNeedsManual' | 'settleCompensatedRun'>
>(RETRY_PRESETS.database);
const undo = proxyActivities<Pick<FetchActivities, 'compensateDownstream'>>(RETRY_PRESETS.compensation);

/** Passes over the claim's pending actions at most: each may bring strays a lookup found. */
const MAX_PASSES = 5;

/** Patch id: histories recorded before it made one pass. */
const PASSES = 'compensation-passes';

export async function compensateRunWorkflow(input: CompensateRunInput): Promise<CompensateRunResult> {
  setStatus('compensating');
  const result = { compensated: 0, notApplied: 0, needsManual: 0 };
  const seen = new Set<string>();
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    if (pass > 0 && !patched(PASSES)) break;
    const pending = await db.pendingCompensations({ fetchRunId: input.fetchRunId, round: input.round });
    const actions = pending.filter((a) => !seen.has(a.actionId));
    if (actions.length === 0) break;
    for (const action of actions) {
      seen.add(action.actionId);
      const outcome = await settle(action, input.round);
      if (outcome !== 'kept') result[outcome]++;
    }
  }
  const { status } = await db.settleCompensatedRun({ fetchRunId: input.fetchRunId });
  setStatus(result.needsManual > 0 ? 'needs_manual' : 'compensated');
  return { ...result, runStatus: status };
}

/** How one action ended: undone, found never applied, handed to a human, or kept (its run succeeded). */
type Outcome = 'compensated' | 'notApplied' | 'needsManual' | 'kept';

/** Undoes one action (reconciling it first when its outcome is unknown); a human gets what fails. */
async function settle(action: DownstreamActionView, round: number): Promise<Outcome> {
  try {
    if (action.partnerId === null || action.state === 'attempting' || action.state === 'unknown') {
      const found = await lookUpUntilSettled(action.actionId, 'settle');
      if (!found.found) return 'notApplied';
      if (found.partnerState === 'voided') return 'compensated';
    }
    // A void the partner's breaker holds back (an outage, an operator's forced open) waits for
    // it rather than handing the action to a human.
    const done = await outlastingOutages('compensateDownstream', () =>
      undo.compensateDownstream({ actionId: action.actionId, round }),
    );
    if (done.state === 'compensated') return 'compensated';
    return done.state === 'not_applied' ? 'notApplied' : 'kept';
  } catch (err) {
    // Cancelling the compensation itself leaves its rows as they are, visible to operators.
    if (isCancellation(err)) throw err;
    const { errorType, errorMessage } = errorOf(err);
    log.warn('compensation step exhausted its budget', { actionId: action.actionId, errorType });
    await db.markNeedsManual({ actionId: action.actionId, errorType, errorMessage });
    return 'needsManual';
  }
}
