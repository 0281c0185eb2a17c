/**
 * What retrying and discarding a dead letter share: loading it, telling whether a replay holds
 * it, and closing it with its audit entry in one transaction.
 *
 * Be very careful: state changes are conditional UPDATEs (db/dead-letters/) on `status = 'open'`
 * and on no replay holding the letter, so an operator racing another operator (or a `dlq replay`)
 * can never move a letter twice.
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { DeadLetter, Prisma, RunStatus } from '../../prisma/generated/client.ts';
import { recordAudit } from '../../db/audit.ts';
import { closeOpenLetter } from '../../db/dead-letters/operator.ts';
import { releaseStaleReservation } from '../../db/dead-letters/replay.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import { replayWorkflowId } from '../../workflows/replay-api.ts';
import { checkText } from '../audit.ts';
import { DEAD_LETTER_TARGET, isDeadLetterId, MAX_REASON_LENGTH, type PrismaCtx } from './view.ts';

/** `--reason`, trimmed (the actor is checked by client/audit.ts `checkActor`). */
export function checkReason(reason: string): string {
  return checkText(reason, 'the reason (--reason)', MAX_REASON_LENGTH);
}

/**
 * The letter with its run's id and status.
 * @throws UserFacingError NOT_FOUND (also for an id that is not a UUID).
 */
export async function loadLetter(
  ctx: PrismaCtx,
  id: string,
): Promise<DeadLetter & { run: { id: string; status: RunStatus } }> {
  const row = isDeadLetterId(id)
    ? await ctx.prisma.deadLetter.findUnique({
        where: { id },
        include: { run: { select: { id: true, status: true } } },
      })
    : null;
  if (!row) throw new UserFacingError(`no dead letter '${id}'`, 'NOT_FOUND');
  return row;
}

/** The refusal of a letter that is no longer open. */
export function notOpen(id: string, status: string, verb: 'retried' | 'discarded'): UserFacingError {
  return new UserFacingError(
    `dead letter ${id} is ${status}: only open letters can be ${verb}`,
    'INVALID_STATE',
  );
}

/** The refusal of a letter a running replay holds. */
export function reserved(id: string, replayId: string): UserFacingError {
  return new UserFacingError(
    `dead letter ${id} is reserved by replay ${replayId}: wait for it to end (or cancel it) first`,
    'RESERVED',
  );
}

/**
 * Whether a letter's replay reservation still holds: its replay workflow is running. A replay
 * that ended without giving it back (terminated) leaves a stale reservation: it is cleared here.
 * Without a Temporal client the reservation is taken to hold.
 */
export async function reservationHolds(
  ctx: PrismaCtx & { temporal?: Client },
  letter: { id: string; replayId: string | null },
): Promise<boolean> {
  if (!letter.replayId) return false;
  if (!ctx.temporal) return true;
  const running = await ctx.temporal.workflow
    .getHandle(replayWorkflowId(letter.replayId))
    .describe()
    .then(
      (d) => d.status.name === 'RUNNING',
      (err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      },
    );
  if (running) return true;
  await releaseStaleReservation(ctx.prisma, { deadLetterId: letter.id, replayId: letter.replayId });
  return false;
}

/**
 * Closes an open letter no replay holds (`retried` or `discarded`) and writes its audit entry, in
 * one transaction. Returns the letter, or undefined when it was no longer open and free.
 */
export async function closeLetter(
  ctx: PrismaCtx,
  id: string,
  close: {
    status: 'retried' | 'discarded';
    actor: string;
    reason: string | null;
    action: string;
    details: Prisma.InputJsonObject;
  },
): Promise<DeadLetter | undefined> {
  return ctx.prisma.$transaction(async (tx) => {
    if (!(await closeOpenLetter(tx, id, close))) return undefined;
    await recordAudit(tx, {
      actor: close.actor,
      action: close.action,
      targetType: DEAD_LETTER_TARGET,
      targetId: id,
      reason: close.reason,
      details: close.details,
    });
    return tx.deadLetter.findUniqueOrThrow({ where: { id } });
  });
}

/** Why a conditional update matched nothing: the letter's state now. */
export async function refusal(
  ctx: PrismaCtx,
  id: string,
  verb: 'retried' | 'discarded',
): Promise<UserFacingError> {
  const now = await ctx.prisma.deadLetter.findUnique({
    where: { id },
    select: { status: true, replayId: true },
  });
  if (now?.status === 'open' && now.replayId) return reserved(id, now.replayId);
  return notOpen(id, now?.status ?? 'gone', verb);
}
