/**
 * The ledger's statements when an unknown outcome is settled by a lookup at the partner (R4):
 * the lookup counted, the settle window read, and what the lookup found recorded — each
 * conditional on the states it may move the row from.
 */
import type { PrismaClient } from '../../prisma/generated/client.ts';

/** Counts one more lookup of `actionId`. Not conditional. */
export async function countLookup(db: Pick<PrismaClient, '$executeRaw'>, actionId: string): Promise<void> {
  await db.$executeRaw`UPDATE downstream_action SET lookups = lookups + 1, updated_at = now() WHERE id = ${actionId}::uuid`;
}

/** How long the last call may still take effect at the partner (0 once it cannot), ms. Read-only. */
export async function settleRemainingMs(
  db: Pick<PrismaClient, '$queryRaw'>,
  actionId: string,
): Promise<number> {
  const [row] = await db.$queryRaw<{ ms: number }[]>`
    SELECT COALESCE(GREATEST(0, EXTRACT(EPOCH FROM settles_at - now()) * 1000), 0)::float8 AS ms
      FROM downstream_action WHERE id = ${actionId}::uuid`;
  return Math.ceil(row?.ms ?? 0);
}

/**
 * The recorded effect is voided at the partner: `compensated`, from any state but a final one
 * or `needs_manual`.
 */
export async function recordVoidedAtPartner(
  db: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  partnerState: string,
): Promise<void> {
  await db.$executeRaw`
    UPDATE downstream_action SET state = 'compensated', partner_state = ${partnerState},
           compensated_at = COALESCE(compensated_at, now()), updated_at = now()
     WHERE id = ${actionId}::uuid AND state IN ('confirmed', 'compensating', 'unknown', 'attempting')`;
}

/** What the partner says of the recorded effect now. Not conditional. */
export async function recordPartnerState(
  db: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  partnerState: string,
): Promise<void> {
  await db.$executeRaw`
    UPDATE downstream_action SET partner_state = ${partnerState}, updated_at = now() WHERE id = ${actionId}::uuid`;
}

/**
 * Adopts the effect a lookup found for an action without a partner id: `confirmed` (or stays
 * `compensating`) — only while no id is recorded yet (a late answer may have recorded its own).
 */
export async function recordFoundEffect(
  db: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  effect: { id: string; status: string },
): Promise<void> {
  await db.$executeRaw`
    UPDATE downstream_action
       SET state = CASE WHEN state = 'compensating' THEN state ELSE 'confirmed' END,
           partner_id = ${effect.id}, partner_state = ${effect.status},
           confirmed_at = now(), updated_at = now()
     WHERE id = ${actionId}::uuid AND partner_id IS NULL
       AND state IN ('attempting', 'unknown', 'compensating')`;
}

/**
 * The partner holds no effect and the settle window is over: `next` (`attempting` to call
 * again, `not_applied` to settle). Conditional on the count and the window seen: a late call
 * counted meanwhile reopens the window. Returns whether it applied.
 */
export async function recordNoEffect(
  db: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  attempts: number,
  next: 'attempting' | 'not_applied',
): Promise<boolean> {
  const settled = await db.$executeRaw`
    UPDATE downstream_action SET state = ${next}::downstream_state, updated_at = now()
     WHERE id = ${actionId}::uuid AND state IN ('attempting', 'unknown', 'compensating') AND partner_id IS NULL
       AND attempts = ${attempts} AND (settles_at IS NULL OR settles_at <= now())`;
  return settled === 1;
}
