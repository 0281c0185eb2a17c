/**
 * An operator's closing of one dead letter (`dlq retry`, `dlq discard`), run inside the
 * transaction that writes its audit entry.
 *
 * Be very careful: the change is a conditional UPDATE on `status = 'open'` and on no replay
 * holding the letter, so an operator racing another operator (or a `dlq replay`) can never move a
 * letter twice.
 */
import type { PrismaClient } from '../../prisma/generated/client.ts';

/**
 * Closes letter `deadLetterId` as `status` by `actor` with `reason`, while it is open and no
 * replay holds it. Returns whether it changed.
 */
export async function closeOpenLetter(
  tx: Pick<PrismaClient, '$executeRaw'>,
  deadLetterId: string,
  close: { status: 'retried' | 'discarded'; actor: string; reason: string | null },
): Promise<boolean> {
  const n = await tx.$executeRaw`
    UPDATE dead_letter
       SET status = ${close.status}::dead_letter_status, closed_at = now(), closed_by = ${close.actor},
           close_reason = ${close.reason}, updated_at = now()
     WHERE id = ${deadLetterId}::uuid AND status = 'open' AND replay_id IS NULL`;
  return n === 1;
}
