/**
 * Operators' view and override of R8's shared circuit breakers (`durable-fetch breakers`): each
 * downstream's breaker and retry-budget use, and forcing a breaker open or closed, audited.
 * Every worker's admission reads the breaker row on each partner call (no cache), so an override
 * takes effect on every worker at the next call; a call already out is not stopped.
 */
import type { AuditEntry, PrismaClient } from '../prisma/generated/client.ts';
import { recordAudit } from '../db/audit.ts';
import { setBreaker } from '../db/retry/breaker.ts';
import {
  type DownstreamBreaker,
  knownDownstreams,
  type LockedBreaker,
  lockBreaker,
  readDownstreamBreakers,
} from '../db/retry/breaker-views.ts';
import { DEFAULT_DOWNSTREAM, defaultSourceOf, DOWNSTREAM_ID_RE } from '../db/ledger/downstreams.ts';
import { SOURCE_ID_RE } from '../contract/business-key.ts';
import { UserFacingError } from '../runtime/errors.ts';
import { checkActor, checkText } from './audit.ts';

export type { DownstreamBreaker };

/** `target_type` of the audit entries about a breaker (its id: the downstream's name). */
export const BREAKER_TARGET = 'breaker';

/** Longest reason kept, as for the other audited commands. */
const MAX_REASON_LENGTH = 1000;

type Ctx = { prisma: PrismaClient };

/**
 * A downstream name argument.
 * @throws UserFacingError INVALID_INPUT (one line) unless it has the shape of a downstream name.
 */
export function checkDownstreamName(value: string): string {
  const own = defaultSourceOf(value);
  if (own === undefined ? !DOWNSTREAM_ID_RE.test(value) : !SOURCE_ID_RE.test(own)) {
    throw new UserFacingError(
      `'${value}' is not a downstream name: expected 1..63 of a-z, 0-9, '-' and '_', starting with ` +
        'a letter (or default.<source id>, the breaker of a source that names no downstream)',
      'INVALID_INPUT',
    );
  }
  return value;
}

/** @throws UserFacingError NOT_FOUND naming the known downstreams, when `name` is none of them. */
async function checkKnown(ctx: Ctx, name: string): Promise<void> {
  const known = await knownDownstreams(ctx.prisma);
  if (known.includes(name)) return;
  const some = known.slice(0, 10).join(', ');
  throw new UserFacingError(
    `no downstream '${name}': no downstream row, no source and no breaker names it` +
      (known.length === 0 ? '' : ` (known: ${some}${known.length > 10 ? ', …' : ''})`),
    'NOT_FOUND',
  );
}

/** Every known downstream's breaker (a row, a source not removed, or a breaker names it), by name. */
export async function listBreakers(ctx: Ctx): Promise<DownstreamBreaker[]> {
  return readDownstreamBreakers(ctx.prisma);
}

/** One downstream's breaker, with the sources naming it and its breaker audit trail (oldest first). */
export interface BreakerDetail extends DownstreamBreaker {
  sources: string[];
  audit: AuditEntry[];
}

/**
 * One downstream's breaker. @throws UserFacingError INVALID_INPUT (not a downstream name),
 * NOT_FOUND (no row, source or breaker names it).
 */
export async function showBreaker(ctx: Ctx, name: string): Promise<BreakerDetail> {
  const id = checkDownstreamName(name);
  await checkKnown(ctx, id);
  const [view] = await readDownstreamBreakers(ctx.prisma, [id]);
  if (!view) throw new Error(`showBreaker: no view of ${id}`);
  const own = defaultSourceOf(id);
  const sources = await ctx.prisma.source.findMany({
    where:
      own === undefined ? { downstream: id, removedAt: null } : { id: own, downstream: DEFAULT_DOWNSTREAM },
    select: { id: true },
    orderBy: { id: 'asc' },
  });
  const audit = await ctx.prisma.auditEntry.findMany({
    where: { targetType: BREAKER_TARGET, targetId: id },
    orderBy: { at: 'desc' },
    take: 20,
  });
  return { ...view, sources: sources.map((s) => s.id), audit: audit.reverse() };
}

/** A breaker before or after an override, as the audit entry keeps it. */
export interface BreakerSnapshot {
  state: DownstreamBreaker['state'];
  forced: boolean;
  reason: string | null;
  changedBy: string | null;
  changedAt: string | null;
}

export interface Override {
  downstream: string;
  before: BreakerSnapshot;
  after: BreakerSnapshot;
}

const snapshot = (b: LockedBreaker): BreakerSnapshot => ({
  state: b.state,
  forced: b.forced,
  reason: b.reason,
  changedBy: b.changedBy,
  changedAt: b.changedAt?.toISOString() ?? null,
});

/** How a breaker reads in one line: `closed`, `open (forced by alice: …)`, `half_open: …`. */
export function breakerText(b: Pick<BreakerSnapshot, 'state' | 'forced' | 'reason' | 'changedBy'>): string {
  const why = b.reason ? `: ${b.reason.replace(/\s+/g, ' ')}` : '';
  if (b.forced) return `${b.state} (forced by ${b.changedBy ?? 'unknown'}${why})`;
  return b.state === 'closed' && !b.changedBy ? 'closed' : `${b.state}${why}`;
}

/**
 * Forces the breaker of `name` open (`to: 'open'`: no partner call of it goes out, on any worker,
 * until someone closes it) or closed (`'closed'`: calls go out again, its failures count from
 * now), with the audit entry `breaker.open`/`breaker.close` (details before/after) in the same
 * transaction, under the row's lock. A breaker already forced open is not opened again, a closed
 * one not closed again: refused, nothing written (no audit entry). An open or half-open breaker
 * can be closed; one the failures opened can be forced open.
 * @throws UserFacingError INVALID_INPUT (name, reason or actor), NOT_FOUND (unknown downstream),
 *   ALREADY_OPEN, NOT_OPEN.
 */
export async function overrideBreaker(
  ctx: Ctx,
  name: string,
  to: 'open' | 'closed',
  options: { reason: string; actor: string },
): Promise<Override> {
  const id = checkDownstreamName(name);
  const reason = checkText(options.reason, 'the reason (--reason)', MAX_REASON_LENGTH);
  const actor = checkActor(options.actor);
  await checkKnown(ctx, id);
  return ctx.prisma.$transaction(async (tx) => {
    const before = await lockBreaker(tx, id);
    if (to === 'open' && before.forced) {
      throw new UserFacingError(
        `the breaker of '${id}' is already ${breakerText(before)}, since ${before.changedAt?.toISOString() ?? '?'}`,
        'ALREADY_OPEN',
      );
    }
    if (to === 'closed' && before.state === 'closed') {
      throw new UserFacingError(`the breaker of '${id}' is already closed`, 'NOT_OPEN');
    }
    await setBreaker(tx, id, to, { actor, reason });
    const after = await lockBreaker(tx, id);
    const change = { downstream: id, before: snapshot(before), after: snapshot(after) };
    await recordAudit(tx, {
      actor,
      action: to === 'open' ? 'breaker.open' : 'breaker.close',
      targetType: BREAKER_TARGET,
      targetId: id,
      reason,
      details: { before: { ...change.before }, after: { ...change.after } },
    });
    return change;
  });
}

/** A breaker's state in a table cell: `open (forced)`, `half_open`, `closed`. */
export const stateCell = (b: DownstreamBreaker) => (b.forced ? `${b.state} (forced)` : b.state);

/** The retry budget's use in a table cell: `3/10`, `10/10 SPENT`. */
export const budgetCell = (b: DownstreamBreaker) =>
  `${b.budget.retries}/${b.budget.allowed}${b.budget.exhausted ? ' SPENT' : ''}`;

/**
 * What `status` reports as needing attention: each breaker that is not closed — open (forced or
 * not: its partner gets no calls and its runs wait) or half-open (only its trial calls go out). The
 * same definition as the `DurableFetchBreakerOpen` alert's (`state=~"open|half_open"`): a partner
 * that keeps failing its trials moves between the two, and is down the whole time.
 */
export function breakerProblems(list: readonly DownstreamBreaker[]): string[] {
  return list
    .filter((b) => b.state !== 'closed')
    .map(
      (b) =>
        `breaker of downstream ${b.downstream} is ${breakerText(b)} since ${b.changedAt?.toISOString() ?? '?'}: ` +
        (b.state === 'open'
          ? `its partner is not called (breakers show ${b.downstream})`
          : `its partner gets only trial calls (breakers show ${b.downstream})`),
    );
}
