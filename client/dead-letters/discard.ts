/** `dlq discard`: give an open dead letter up, with a reason. */
import type { Client } from '@temporalio/client';
import { checkActor } from '../audit.ts';
import {
  checkReason,
  closeLetter,
  loadLetter,
  notOpen,
  refusal,
  reservationHolds,
  reserved,
} from './state-changes.ts';
import { type DeadLetterView, type PrismaCtx, view } from './view.ts';

export interface DiscardDeadLetterOptions {
  /** Who decided. */
  actor: string;
  /** Why the run is given up (1..1000 characters); kept on the letter and in the audit trail. */
  reason: string;
}

/**
 * Gives an open dead letter up: it becomes `discarded` with who, when and why, and an audit entry
 * `dead_letter.discard` is written in the same transaction. Starts nothing; the run stays as it is.
 * @throws UserFacingError NOT_FOUND, INVALID_STATE (not open), RESERVED (a replay holds it),
 *   INVALID_INPUT (empty or too long reason or actor).
 */
export async function discardDeadLetter(
  ctx: PrismaCtx & { temporal?: Client },
  id: string,
  options: DiscardDeadLetterOptions,
): Promise<DeadLetterView> {
  const reason = checkReason(options.reason);
  const actor = checkActor(options.actor);
  const letter = await loadLetter(ctx, id);
  if (letter.status !== 'open') throw notOpen(letter.id, letter.status, 'discarded');
  if (letter.replayId && (await reservationHolds(ctx, letter))) throw reserved(letter.id, letter.replayId);
  const updated = await closeLetter(ctx, letter.id, {
    status: 'discarded',
    actor,
    reason,
    action: 'dead_letter.discard',
    details: { from: 'open', runStatus: letter.run.status },
  });
  if (!updated) throw await refusal(ctx, letter.id, 'discarded');
  return view(updated);
}
