/**
 * Undoing what a run must not keep (R4, R11): the effects of a run that failed for good or was
 * cancelled, and strays — effects the ledger did not expect — whatever the run's outcome. A step
 * that exhausts its budget is handed to a human (`needs_manual`), never swallowed.
 */
import type {
  CompensateRunInput,
  DownstreamActionView,
  DownstreamStateName,
  MarkNeedsManualInput,
} from '../workflows/types.ts';
import type { ActivityDeps } from './deps.ts';
import type { PartnerCalls } from './downstream-calls.ts';
import { COMPENSABLE_STATES, loadAction, MAX_MESSAGE, settleRun, view } from './downstream-ledger.ts';
import { failure } from './errors.ts';
import { loadSource } from './sources.ts';
import { actOnSubmission, type Submission } from './submissions-client.ts';

export function createCompensateActivities(deps: ActivityDeps, calls: PartnerCalls) {
  const { prisma } = deps;
  return {
    /**
     * Undoes a recorded effect (`POST /submissions/:id/void`, repeat-safe by id). The attempt is
     * counted before the call. Works for a disabled source too: undoing is always allowed. A
     * succeeded run keeps its own effect, never its strays.
     * @throws the HTTP client's typed failures (retried within the compensation preset; the
     *   workflow then marks the row `needs_manual`).
     */
    async compensateDownstream(input: { actionId: string }): Promise<{ state: DownstreamStateName }> {
      const row = await loadAction(prisma, input.actionId);
      if (row.state === 'compensated' || row.state === 'not_applied' || row.state === 'resolved')
        return { state: row.state };
      // A run that succeeded keeps its effect, whatever asked (a failure seen after the commit).
      if (row.run.status === 'succeeded' && row.strayOf === null) return { state: row.state };
      if (!row.partnerId)
        throw failure('Internal', 'NO_PARTNER_ID', `action ${row.id}: reconcile before compensating`);
      const partnerId = row.partnerId;
      const source = await loadSource(prisma, row.run.sourceId);
      const started = await prisma.$executeRaw`
        UPDATE downstream_action SET state = 'compensating', compensation_attempts = compensation_attempts + 1,
               updated_at = now()
         WHERE id = ${row.id}::uuid AND state IN ('confirmed', 'compensating')`;
      if (started !== 1)
        throw failure('Internal', 'LEDGER_STATE', `action ${row.id} is ${row.state}, not compensable`);
      let voided: Submission;
      try {
        voided = await calls.withHeartbeats(source.id, (signal) =>
          actOnSubmission(deps.http, calls.target(source, signal), partnerId, 'void'),
        );
      } catch (err) {
        await calls.noteError(row.id, err, `partner ${source.id} void`);
        throw err;
      }
      await prisma.$executeRaw`
        UPDATE downstream_action SET state = 'compensated', partner_state = ${voided.status}, compensated_at = now(),
               last_error_type = NULL, last_error = NULL, updated_at = now()
         WHERE id = ${row.id}::uuid AND state = 'compensating'`;
      deps.log.info({ actionId: row.id, partnerId }, 'downstream effect compensated');
      return { state: 'compensated' };
    },

    /** Hands an action to a human: `needs_manual` with the failure that exhausted its budget. */
    async markNeedsManual(input: MarkNeedsManualInput): Promise<void> {
      const message = input.errorMessage.slice(0, MAX_MESSAGE);
      await prisma.$executeRaw`
        UPDATE downstream_action SET state = 'needs_manual', last_error_type = ${input.errorType},
               last_error = ${message}, updated_at = now()
         WHERE id = ${input.actionId}::uuid AND state NOT IN ('compensated', 'not_applied', 'resolved')`;
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
      const rows = await prisma.downstreamAction.findMany({
        where: {
          fetchRunId: input.fetchRunId,
          round: input.round,
          state: { in: [...COMPENSABLE_STATES] },
          OR: [{ run: { status: { in: ['dead_lettered', 'cancelled'] } } }, { strayOf: { not: null } }],
        },
        orderBy: [{ step: 'desc' }, { createdAt: 'desc' }],
      });
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
