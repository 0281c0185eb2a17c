/**
 * `compensations resolve`: an operator records that a `needs_manual` row was settled by hand.
 *
 * Be very careful: the change is a conditional UPDATE on `needs_manual` (db/ledger/operator.ts),
 * like the activities' (activities/downstream/index.ts), so an operator racing a compensation (or
 * another operator) can never move a row backwards; the audit entry and the run's settlement
 * share its transaction.
 */
import { settleRun } from '../../db/ledger/ledger.ts';
import { recordAudit } from '../../db/audit.ts';
import { resolveNeedsManual } from '../../db/ledger/operator.ts';
import { checkActor, checkText } from '../audit.ts';
import {
  type Compensation,
  COMPENSATION_TARGET,
  flatten,
  loadRow,
  MAX_NOTE_LENGTH,
  notNeedsManual,
  type PrismaCtx,
  RUN_KEY,
  stateNow,
} from './common.ts';

export interface ResolveOptions {
  /** What was done by hand and why (1..1000 characters); kept on the row and in the audit trail. */
  note: string;
  /** Who did it. */
  actor: string;
}

export interface Resolved {
  compensation: Compensation;
  previousState: 'needs_manual';
  /** The run's status afterwards: `compensated` once none of its actions is unsettled. */
  runStatus: string;
}

/**
 * Records that a human settled a `needs_manual` row (e.g. voided the submission in the partner's
 * portal, or established it never existed): the row becomes `resolved` with who, when and why, and
 * an audit entry `compensation.resolve` is written in the same transaction. Then the run is
 * settled: it becomes `compensated` when none of its actions is unsettled any more.
 * Calls no partner.
 * @throws UserFacingError NOT_FOUND, INVALID_STATE (the row is not `needs_manual`; nothing is
 *   changed), INVALID_INPUT (empty or too long note or actor).
 */
export async function resolveCompensation(
  ctx: PrismaCtx,
  id: string,
  options: ResolveOptions,
): Promise<Resolved> {
  const note = checkText(options.note, 'the note (--note)', MAX_NOTE_LENGTH);
  const actor = checkActor(options.actor);
  const row = await loadRow(ctx, id);
  if (row.state !== 'needs_manual') throw notNeedsManual(row.id, row.state, 'resolved');
  const updated = await ctx.prisma.$transaction(async (tx) => {
    const changed = await resolveNeedsManual(tx, row.id, { actor, note });
    if (!changed) return undefined;
    await recordAudit(tx, {
      actor,
      action: 'compensation.resolve',
      targetType: COMPENSATION_TARGET,
      targetId: row.id,
      reason: note,
      details: { from: 'needs_manual', partnerId: changed.partnerId },
    });
    // In the same transaction: a resolved row and a run still waiting for it never coexist.
    const { status } = await settleRun(tx, row.fetchRunId);
    const action = await tx.downstreamAction.findUniqueOrThrow({
      where: { id: row.id },
      include: { run: RUN_KEY },
    });
    return { action, status };
  });
  if (!updated) throw notNeedsManual(row.id, await stateNow(ctx, row.id), 'resolved');
  return { compensation: flatten(updated.action), previousState: 'needs_manual', runStatus: updated.status };
}
