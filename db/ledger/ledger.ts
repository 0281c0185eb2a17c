/**
 * The compensation ledger (`downstream_action`, R4): its state sets, loading a row, recording a
 * stray, the last error, settling a compensated run. The statements of each step are beside it:
 * ledger-intent.ts, ledger-submit.ts, ledger-reconcile.ts, ledger-compensate.ts. States are
 * explained in docs/runbook.md.
 *
 * Be very careful: every state change is a conditional UPDATE on the state it expects, so a
 * repeated or late attempt (a worker that died, or froze, and came back) cannot move a row
 * backwards.
 */
import type { DownstreamAction, PrismaClient } from '../../prisma/generated/client.ts';
import { NOT_FINAL_STATES } from '../../contract/states.ts';
import { MAX_KEPT_MESSAGE } from '../limits.ts';

/** A ledger row with what its activities need of its run. */
export type ActionRow = DownstreamAction & { run: { sourceId: string; status: string } };

/** The action `actionId` with its run's source and status, or null. Read-only. */
export async function findAction(
  db: Pick<PrismaClient, 'downstreamAction'>,
  actionId: string,
): Promise<ActionRow | null> {
  return db.downstreamAction.findUnique({
    where: { id: actionId },
    include: { run: { select: { sourceId: true, status: true } } },
  });
}

/** What a claim acts on of the action `actionId` (one read, without its run), or null. Read-only. */
export async function findActionState(
  db: Pick<PrismaClient, 'downstreamAction'>,
  actionId: string,
): Promise<ActionState | null> {
  return db.downstreamAction.findUnique({
    where: { id: actionId },
    select: { id: true, state: true, attempts: true, partnerId: true },
  });
}

/** What a claim acts on of its ledger row. */
export type ActionState = Pick<DownstreamAction, 'id' | 'state' | 'attempts' | 'partnerId'>;

/**
 * Records a stray: an effect the partner holds under `action`'s reference that the ledger did not
 * expect (a stale attempt's call that took effect after the ledger moved on, or a second live
 * effect a lookup or `reconcile` found beside the recorded one). The stray is a ledger row of its
 * own (`stray_of` = the action, state `confirmed` = live at the partner), so that the compensation
 * path voids it whatever the run's outcome, and operators see it until it is settled. Idempotent
 * per partner id. Returns whether it was new.
 */
export async function recordStray(
  db: Pick<PrismaClient, '$executeRaw'>,
  action: Pick<DownstreamAction, 'id'>,
  stray: { partnerId: string; partnerState: string },
  why: string,
): Promise<boolean> {
  const inserted = await db.$executeRaw`
    INSERT INTO downstream_action (id, fetch_run_id, business_key, key, round, action, step, reference,
                                   partner_id, partner_state, state, stray_of, last_error_type, last_error,
                                   confirmed_at)
    SELECT gen_random_uuid(), a.fetch_run_id, a.business_key, a.key || ':stray:' || ${stray.partnerId}, a.round,
           a.action, a.step, a.reference, ${stray.partnerId}, ${stray.partnerState}, 'confirmed', a.id,
           'OutcomeUnknown', ${why.slice(0, MAX_KEPT_MESSAGE)}, now()
      FROM downstream_action a
     WHERE a.id = ${action.id}::uuid AND a.stray_of IS NULL
    ON CONFLICT (key) DO NOTHING`;
  return inserted === 1;
}

/** Records the last failure of a step on the row, whatever its state. Not conditional. */
export async function recordLastError(
  db: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  error: { type: string; message: string },
): Promise<number> {
  return db.$executeRaw`
    UPDATE downstream_action SET last_error_type = ${error.type}, last_error = ${error.message}, updated_at = now()
     WHERE id = ${actionId}::uuid`;
}

/**
 * Marks a failed or cancelled run `compensated` once none of its actions (of any claim, strays
 * included) is in {@link NOT_FINAL_STATES}; returns the run's status either way (`missing`
 * without a run). Idempotent. Shared with `compensations resolve`, which runs it in its own
 * transaction.
 */
export async function settleRun(
  db: Pick<PrismaClient, '$queryRaw'>,
  fetchRunId: string,
): Promise<{ status: string }> {
  const unsettled = NOT_FINAL_STATES.join(',');
  const rows = await db.$queryRaw<{ status: string }[]>`
    WITH settled AS (
      UPDATE fetch_run SET status = 'compensated', updated_at = now()
       WHERE id = ${fetchRunId}::uuid AND status IN ('dead_lettered', 'cancelled')
         AND NOT EXISTS (SELECT 1 FROM downstream_action a
                          WHERE a.fetch_run_id = ${fetchRunId}::uuid
                            AND a.state::text = ANY (string_to_array(${unsettled}, ',')))
      RETURNING status::text AS status)
    SELECT status FROM settled
    UNION ALL
    SELECT status::text FROM fetch_run WHERE id = ${fetchRunId}::uuid AND NOT EXISTS (SELECT 1 FROM settled)`;
  return { status: rows[0]?.status ?? 'missing' };
}
