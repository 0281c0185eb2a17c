/**
 * What the source commands share: the audit target, the reason check, the not-found error, and
 * the row lock every change takes before it reads what it changes.
 */
import type { Client } from '@temporalio/client';
import { LIVE_RUN_STATUSES } from '../../contract/states.ts';
import { lockSource } from '../../db/sources.ts';
import type { Prisma, PrismaClient, Source } from '../../prisma/generated/client.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import { isSourceId } from '../../contract/business-key.ts';
import { checkText } from '../audit.ts';
import { MAX_NOTE_LENGTH } from '../compensations/index.ts';

/** `target_type` of the audit entries about a source. */
export const SOURCE_TARGET = 'source';

export type PrismaCtx = { prisma: PrismaClient };
export type TemporalCtx = PrismaCtx & { temporal: Client; taskQueue: string };

/** Free text shown inside a one-line message. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The reason, trimmed. @throws UserFacingError INVALID_INPUT unless 1..1000 characters. */
export function checkReason(reason: string): string {
  return checkText(reason, 'the reason (--reason)', MAX_NOTE_LENGTH);
}

/** A NOT_FOUND error naming some known sources (removed ones included: their id still answers). */
export async function notFound(ctx: PrismaCtx, id: string): Promise<UserFacingError> {
  const known = await ctx.prisma.source.findMany({ select: { id: true }, orderBy: { id: 'asc' }, take: 20 });
  const list = known.map((s) => s.id).join(', ') || 'none';
  return new UserFacingError(`no source '${id}' (known sources: ${list})`, 'NOT_FOUND');
}

export { lockSource } from '../../db/sources.ts';

/**
 * Runs `change` in a transaction on the live source `id`, its row locked first (every change of a
 * source reads what it changes under the lock), and returns what `change` returns. `timeout`:
 * the transaction's (Prisma's default, 5 s, unless given; a change that calls Temporal needs more).
 * @throws UserFacingError NOT_FOUND (no such source), SOURCE_REMOVED (removed: ids are never
 *   reused, and a removed source is never changed); nothing is changed then.
 */
export async function changeLiveSource<T>(
  ctx: PrismaCtx,
  id: string,
  change: (tx: Prisma.TransactionClient, current: Source) => Promise<T>,
  options: { timeout?: number } = {},
): Promise<T> {
  if (!isSourceId(id)) throw await notFound(ctx, id);
  const outcome = await ctx.prisma.$transaction(async (tx) => {
    const current = await lockSource(tx, id);
    if (!current) return { kind: 'missing' as const };
    if (current.removedAt) return { kind: 'removed' as const, current };
    return { kind: 'changed' as const, value: await change(tx, current) };
  }, options);
  if (outcome.kind === 'missing') throw await notFound(ctx, id);
  if (outcome.kind === 'removed') throw removedError(outcome.current);
  return outcome.value;
}

/** Runs of the source that are live: `running`, or `retry_wait` (a step waits for its retry). Read-only. */
export async function countRunning(ctx: PrismaCtx, sourceId: string): Promise<number> {
  return ctx.prisma.fetchRun.count({ where: { sourceId, status: { in: [...LIVE_RUN_STATUSES] } } });
}

/** `removed <iso> by <who>`: how messages about a removed source say so. */
export function removedText(source: Pick<Source, 'removedAt' | 'removedBy'>): string {
  if (!source.removedAt) return 'not removed';
  return `removed ${source.removedAt.toISOString()}${source.removedBy ? ` by ${oneLine(source.removedBy)}` : ''}`;
}

/** A source that was removed: refused by every command that would change or run it. */
export function removedError(source: Source): UserFacingError {
  return new UserFacingError(
    `source '${source.id}' was ${removedText(source)}: its id is kept for its runs and audit trail and is never reused`,
    'SOURCE_REMOVED',
  );
}
