/**
 * An operator's changes to one ledger row (`compensations resolve`, `compensations retry`), each
 * run inside the transaction that writes its audit entry.
 *
 * Be very careful: like the activities' (ledger.ts), every change is a conditional UPDATE on the
 * state the row was read in, so an operator racing a compensation (or another operator) can never
 * move a row backwards; a change that matched nothing is refused by the caller with the row's
 * state now.
 */
import type { DownstreamState, PrismaClient } from '../../prisma/generated/client.ts';

/**
 * Marks the `needs_manual` row `actionId` `resolved` by `actor` with `note` (settled by hand).
 * Returns the row's partner id, or undefined when it was no longer `needs_manual`.
 */
export async function resolveNeedsManual(
  tx: Pick<PrismaClient, '$queryRaw'>,
  actionId: string,
  resolution: { actor: string; note: string },
): Promise<{ partnerId: string | null } | undefined> {
  const changed = await tx.$queryRaw<{ partner_id: string | null }[]>`
    UPDATE downstream_action
       SET state = 'resolved', resolved_at = now(), resolved_by = ${resolution.actor},
           resolution_note = ${resolution.note}, updated_at = now()
     WHERE id = ${actionId}::uuid AND state = 'needs_manual'
    RETURNING partner_id`;
  const first = changed[0];
  return first ? { partnerId: first.partner_id } : undefined;
}

/**
 * Moves row `actionId` from `from` to `to` for a retry of its compensation. Returns whether it
 * changed (false when the row is no longer `from`).
 */
export async function moveForRetry(
  tx: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  from: DownstreamState,
  to: DownstreamState,
): Promise<boolean> {
  const n = await tx.$executeRaw`
    UPDATE downstream_action SET state = ${to}::downstream_state, updated_at = now()
     WHERE id = ${actionId}::uuid AND state = ${from}::downstream_state`;
  return n === 1;
}

/**
 * Puts row `actionId` back to `needs_manual` from `from` (a retry whose compensation did not
 * start). Returns whether it changed (false when the row moved on meanwhile).
 */
export async function putBackNeedsManual(
  tx: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  from: string,
): Promise<boolean> {
  const n = await tx.$executeRaw`
    UPDATE downstream_action SET state = 'needs_manual', updated_at = now()
     WHERE id = ${actionId}::uuid AND state = ${from}::downstream_state`;
  return n === 1;
}
