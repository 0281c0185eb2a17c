/**
 * The ledger's statements around a non-idempotent downstream call (R4): the call counted (and
 * its settle window set) immediately before it is sent, its outcome recorded after, the
 * partner's state after a confirm. Each is conditional on the state and call count it expects.
 */
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { type Fence, heldBy } from '../fence.ts';

/** What a counted call sends: the action's reference and the run's counts. */
export interface CountedCall {
  reference: string;
  pages: number;
  records: number;
  business_date: string;
}

/**
 * Counts one more call of `actionId` and opens its settle window (`settleMs` from the database's
 * now) — only while the row is `attempting` after exactly `expectedAttempts` calls and `fence`
 * holds the run. Returns what the call sends, or undefined when the row or the run moved on.
 */
export async function countCall(
  db: Pick<PrismaClient, '$queryRaw'>,
  fence: Fence,
  call: { actionId: string; expectedAttempts: number; settleMs: number },
): Promise<CountedCall | undefined> {
  const taken = await db.$queryRaw<CountedCall[]>`
    UPDATE downstream_action a
       SET attempts = a.attempts + 1, last_call_at = now(),
           settles_at = now() + make_interval(secs => ${call.settleMs / 1000}), updated_at = now()
      FROM fetch_run r
     WHERE a.id = ${call.actionId}::uuid AND a.state = 'attempting' AND a.attempts = ${call.expectedAttempts}
       AND r.id = a.fetch_run_id AND ${heldBy(fence, 'r')}
    RETURNING a.reference, r.pages_stored AS pages, r.records_stored AS records,
              to_char(r.business_date, 'YYYY-MM-DD') AS business_date`;
  return taken[0];
}

/**
 * Records a failed call's outcome: `not_applied` (the partner refused outright) or `unknown` (it
 * may hold an effect) — only while no later call was counted (the row is still `attempting`
 * after `counted` calls): a superseded attempt must not reopen a settled row.
 */
export async function recordCallFailed(
  db: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  counted: number,
  outcome: 'not_applied' | 'unknown',
  error: { type: string; message: string },
): Promise<void> {
  if (outcome === 'not_applied') {
    await db.$executeRaw`
      UPDATE downstream_action SET state = 'not_applied', last_error_type = ${error.type}, last_error = ${error.message},
             updated_at = now()
       WHERE id = ${actionId}::uuid AND state = 'attempting' AND attempts = ${counted}`;
    return;
  }
  await db.$executeRaw`
    UPDATE downstream_action SET state = 'unknown', last_error_type = ${error.type}, last_error = ${error.message},
           updated_at = now()
     WHERE id = ${actionId}::uuid AND state = 'attempting' AND attempts = ${counted}`;
}

/**
 * Records the partner's id of the call counted `counted`: the row is `confirmed` (or stays
 * `compensating`). This call's answer is authoritative while no later call was made: it records
 * the id even when another attempt marked the row unknown meanwhile. Returns whether it applied.
 */
export async function recordSubmission(
  db: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  counted: number,
  submission: { id: string; status: string },
): Promise<boolean> {
  const recorded = await db.$executeRaw`
    UPDATE downstream_action
       SET state = CASE WHEN state = 'compensating' THEN state ELSE 'confirmed' END,
           partner_id = ${submission.id}, partner_state = ${submission.status},
           confirmed_at = now(), last_error_type = NULL, last_error = NULL, updated_at = now()
     WHERE id = ${actionId}::uuid AND state IN ('attempting', 'unknown', 'compensating')
       AND attempts = ${counted} AND partner_id IS NULL`;
  return recorded === 1;
}

/** Records what a confirm returned: the partner's state, no error. Not conditional. */
export async function recordConfirmed(
  db: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  partnerState: string,
): Promise<void> {
  await db.$executeRaw`
    UPDATE downstream_action SET partner_state = ${partnerState}, last_error_type = NULL, last_error = NULL,
           updated_at = now()
     WHERE id = ${actionId}::uuid`;
}

/**
 * Marks an action `unknown` whose last counted call (`attempts`) ended without recording its
 * outcome (its attempt died or froze) — only while it is still `attempting` at that count.
 */
export async function markOutcomeLost(
  db: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  attempts: number,
): Promise<void> {
  await db.$executeRaw`
    UPDATE downstream_action SET state = 'unknown', last_error_type = 'OutcomeUnknown',
           last_error = 'an earlier attempt ended without recording its outcome', updated_at = now()
     WHERE id = ${actionId}::uuid AND state = 'attempting' AND attempts = ${attempts}`;
}
