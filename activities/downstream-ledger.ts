/**
 * The compensation ledger (`downstream_action`, R4): its states, how a row is handed to
 * workflows, and the statements that several activities and operator commands share — loading an
 * action, recording a stray, settling a compensated run. States are explained in docs/runbook.md.
 *
 * Be very careful: every state change is a conditional UPDATE on the state it expects, so a
 * repeated or late attempt (a worker that died, or froze, and came back) cannot move a row
 * backwards.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { DownstreamAction, PrismaClient } from '../prisma/generated/client.ts';
import type { DownstreamActionView, DownstreamStateName } from '../workflows/types.ts';
import { classify, failure, MAX_KEPT_MESSAGE } from './errors.ts';

/** States in which an action may still hold an effect the ledger has not settled. */
export const UNSETTLED_STATES: readonly DownstreamStateName[] = [
  'attempting',
  'unknown',
  'confirmed',
  'compensating',
  'needs_manual',
];

/** States the compensation workflow works on (`needs_manual` waits for an operator). */
export const COMPENSABLE_STATES: readonly DownstreamStateName[] = [
  'attempting',
  'unknown',
  'confirmed',
  'compensating',
];

export type ActionRow = DownstreamAction & { run: { sourceId: string; status: string } };

export function view(row: DownstreamAction): DownstreamActionView {
  return { actionId: row.id, state: row.state, attempts: row.attempts, partnerId: row.partnerId };
}

/** The failure's type and a short message, for the row's `last_error*` columns. */
export function errorFields(err: unknown, what: string): { type: string; message: string } {
  const f = classify(err, what);
  if (f instanceof ApplicationFailure)
    return { type: f.type ?? 'Internal', message: f.message.slice(0, MAX_KEPT_MESSAGE) };
  return { type: 'Cancelled', message: `${what}: cancelled` };
}

export function outcomeUnknown(message: string): ApplicationFailure {
  return failure('OutcomeUnknown', 'OUTCOME_UNKNOWN', message);
}

/** @throws ApplicationFailure NotFound when the action does not exist. */
export async function loadAction(
  prisma: Pick<PrismaClient, 'downstreamAction'>,
  actionId: string,
): Promise<ActionRow> {
  const row = await prisma.downstreamAction.findUnique({
    where: { id: actionId },
    include: { run: { select: { sourceId: true, status: true } } },
  });
  if (!row) throw failure('NotFound', 'ACTION_NOT_FOUND', `downstream action ${actionId} does not exist`);
  return row;
}

/**
 * Records a stray: an effect the partner holds under `action`'s reference that the ledger did not
 * expect (a stale attempt's call that took effect after the ledger moved on, or a second live
 * effect a lookup or `reconcile` found beside the recorded one). The stray is a ledger row of its
 * own (`stray_of` = the action, state `confirmed` = live at the partner), so that the compensation
 * path voids it whatever the run's outcome, and operators see it until it is settled. Idempotent
 * per partner id. Returns whether it was new.
 */
export async function recordStray(
  prisma: Pick<PrismaClient, '$executeRaw'>,
  action: Pick<DownstreamAction, 'id'>,
  stray: { partnerId: string; partnerState: string },
  why: string,
): Promise<boolean> {
  const inserted = await prisma.$executeRaw`
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

/**
 * Marks a failed or cancelled run `compensated` once none of its actions (of any claim, strays
 * included) is unsettled; returns the run's status either way. Idempotent. Shared with
 * `compensations resolve`, which runs it in its own transaction.
 */
export async function settleRun(
  db: Pick<PrismaClient, '$queryRaw'>,
  fetchRunId: string,
): Promise<{ status: string }> {
  const unsettled = UNSETTLED_STATES.join(',');
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
