/**
 * Undoing what a run must not keep (R4, R11): the effects of a run that failed for good or was
 * cancelled, and strays — effects the ledger did not expect — whatever the run's outcome. A step
 * that exhausts its budget is handed to a human (`needs_manual`), never swallowed.
 */
import { settleRun } from '../../db/ledger/ledger.ts';
import {
  markNeedsManual,
  pendingCompensations,
  recordCompensated,
  startCompensation,
} from '../../db/ledger/compensate.ts';
import { MAX_KEPT_MESSAGE } from '../../db/limits.ts';
import type {
  CompensateRunInput,
  DownstreamActionView,
  DownstreamStateName,
  MarkNeedsManualInput,
} from '../../contract/types.ts';
import type { ActivityDeps } from '../deps.ts';
import type { PartnerCalls } from './calls.ts';
import { loadAction, view } from './ledger.ts';
import { failure } from '../errors.ts';
import { loadSource } from '../sources.ts';
import type { DownstreamEffect } from '../job-api/define.ts';

export function createCompensateActivities(deps: ActivityDeps, calls: PartnerCalls) {
  const { prisma } = deps;
  return {
    /**
     * Undoes a recorded effect with the job's `void` hook (repeat-safe by id). The void is
     * counted once the breaker let it through, before the call, in one statement that also checks
     * the effect is still this compensation's to undo: a stray, or an action of a run that ended
     * without succeeding and is still owned by claim `round` (a later claim may have adopted it,
     * or the run been taken up again, meanwhile). Works for a disabled source too: undoing is
     * always allowed.
     * @throws the HTTP client's typed failures (retried within the compensation preset; the
     *   workflow then marks the row `needs_manual`); CircuitOpen when the breaker refused the
     *   void (nothing sent or counted).
     */
    async compensateDownstream(input: {
      actionId: string;
      /** The claim being compensated; absent from workflow code deployed before it was fenced. */
      round?: number;
    }): Promise<{ state: DownstreamStateName }> {
      const row = await loadAction(prisma, input.actionId);
      if (row.state === 'compensated' || row.state === 'not_applied' || row.state === 'resolved')
        return { state: row.state };
      if (!row.partnerId)
        throw failure('Internal', 'NO_PARTNER_ID', `action ${row.id}: reconcile before compensating`);
      const partnerId = row.partnerId;
      const source = await loadSource(prisma, row.run.sourceId);
      // The breaker is asked first, so that `compensation_attempts` counts the voids sent: an
      // attempt it refuses (CircuitOpen) still spends one of the preset's, but not one of those.
      const admitted = await calls.admit(source, 'void');
      // Be very careful: counting the attempt and adopting the action exclude each other on the
      // row (startCompensation): an adopted effect is never voided, a voided one never adopted.
      if (!(await startCompensation(prisma, row.id, input.round ?? null))) {
        await calls.release(admitted);
        // Not this compensation's to undo (a succeeded run keeps its effect; a later claim owns
        // it), or settled meanwhile: nothing to do.
        const now = await loadAction(prisma, input.actionId);
        deps.log.info({ actionId: row.id, state: now.state, round: now.round }, 'compensation: effect kept');
        return { state: now.state };
      }
      let voided: DownstreamEffect;
      try {
        voided = await calls.call(source, 'void', (action, ctx) => action.void(ctx, partnerId), admitted);
      } catch (err) {
        await calls.noteError(row.id, err, `partner ${source.id} void`);
        throw err;
      }
      await recordCompensated(prisma, row.id, voided.status);
      deps.log.info({ actionId: row.id, partnerId }, 'downstream effect compensated');
      return { state: 'compensated' };
    },

    /** Hands an action to a human: `needs_manual` with the failure that exhausted its budget. */
    async markNeedsManual(input: MarkNeedsManualInput): Promise<void> {
      const message = input.errorMessage.slice(0, MAX_KEPT_MESSAGE);
      await markNeedsManual(prisma, input.actionId, { type: input.errorType, message });
      deps.log.warn(
        { actionId: input.actionId, errorType: input.errorType },
        'downstream action needs a human',
      );
    },

    /**
     * The actions of one claim the compensation must still settle, latest step first: all of them
     * when the run ended without succeeding, and its strays whatever the run's outcome.
     */
    async pendingCompensations(
      input: Pick<CompensateRunInput, 'fetchRunId' | 'round'>,
    ): Promise<DownstreamActionView[]> {
      const rows = await pendingCompensations(prisma, input.fetchRunId, input.round);
      return rows.map(view);
    },

    /**
     * Marks a failed or cancelled run `compensated` once none of its actions (of any claim) is
     * unsettled; returns the run's status either way. Idempotent.
     */
    async settleCompensatedRun(input: { fetchRunId: string }): Promise<{ status: string }> {
      return settleRun(prisma, input.fetchRunId);
    },
  };
}
