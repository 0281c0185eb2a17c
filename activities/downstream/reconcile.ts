/**
 * Settling an unknown outcome by looking the action's reference up at the partner (a read),
 * never by calling again blindly (R4). A lookup that finds nothing proves "not applied" only once
 * the last call's settle window is over: a partner may apply a request long after its client gave
 * up, or while its client is frozen.
 */
import { type ActionRow, recordStray } from '../../db/ledger/ledger.ts';
import {
  countLookup,
  recordFoundEffect,
  recordNoEffect,
  recordPartnerState,
  recordVoidedAtPartner,
  settleRemainingMs,
} from '../../db/ledger/reconcile.ts';
import type { ReconcileActionInput, ReconcileActionResult } from '../../contract/types.ts';
import type { ActivityDeps } from '../deps.ts';
import type { PartnerCalls } from './calls.ts';
import { loadAction, outcomeUnknown } from './ledger.ts';
import { loadSource } from '../sources.ts';
import type { DownstreamEffect } from '../job-api/define.ts';

export function createReconcileActivity(deps: ActivityDeps, calls: PartnerCalls) {
  const { prisma } = deps;

  /** Live submissions under the reference that are not the action's own: strays, to be voided. */
  async function recordStrays(row: ActionRow, extra: readonly DownstreamEffect[]): Promise<void> {
    for (const s of extra) {
      const why = 'a lookup found it live beside the recorded submission';
      if (await recordStray(prisma, row, { partnerId: s.id, partnerState: s.status }, why)) {
        deps.metrics.downstreamStrays.inc({ source: row.run.sourceId });
        deps.log.warn({ actionId: row.id, partnerId: s.id }, 'a stray submission found: to be voided');
      }
    }
  }

  return {
    /**
     * Settles an unknown outcome by looking the action's reference up at the partner (a read).
     * Known id: refreshes what the partner says of it. Unknown id: the oldest live submission under
     * the reference is adopted. Either way, any other live one there is recorded as a stray (to be
     * voided). None live: while the last call's settle window lasts, `settleInMs` says when to look
     * again and nothing changes; after it, nothing happened (`attempting` again for
     * `onAbsent: 'retry'`, `not_applied` for `'settle'`).
     * @throws ApplicationFailure OutcomeUnknown (non-retryable) when the partner no longer knows a
     *   recorded id, or the action is settled by a human without one; the HTTP client's typed
     *   failures when the lookup fails (retried within the lookup preset).
     */
    async reconcileDownstream(input: ReconcileActionInput): Promise<ReconcileActionResult> {
      const row = await loadAction(prisma, input.actionId);
      if (row.state === 'not_applied') return { found: false, attempts: row.attempts };
      if (row.state === 'compensated' || row.state === 'resolved' || row.state === 'needs_manual') {
        if (row.partnerId)
          return { found: true, partnerId: row.partnerId, partnerState: row.partnerState ?? '' };
        throw outcomeUnknown(`downstream action ${row.id} is ${row.state}: nothing to reconcile`);
      }
      const source = await loadSource(prisma, row.run.sourceId);
      await countLookup(prisma, row.id);
      let found: readonly DownstreamEffect[];
      try {
        found = await calls.call(source, 'lookup', (action, ctx) => action.lookup(ctx, row.reference));
      } catch (err) {
        await calls.noteError(row.id, err, `partner ${source.id} lookup`);
        throw err;
      }
      const live = found.filter((s) => !s.voided);
      if (row.partnerId) {
        const known = found.find((s) => s.id === row.partnerId);
        if (!known) throw outcomeUnknown(`partner ${source.id} no longer lists submission ${row.partnerId}`);
        if (known.voided) {
          await recordVoidedAtPartner(prisma, row.id, known.status);
        } else {
          await recordPartnerState(prisma, row.id, known.status);
        }
        await recordStrays(
          row,
          live.filter((s) => s.id !== known.id),
        );
        return { found: true, partnerId: known.id, partnerState: known.status };
      }
      // Several live under one action's reference: copies of the same call, made by attempts the
      // ledger could not tell apart. The oldest is the action's effect; the others are strays.
      const oldest = live[0];
      if (oldest) {
        await recordFoundEffect(prisma, row.id, oldest);
        // Whichever id is on the row now (a late answer may have recorded its own first) is the effect.
        const now = await loadAction(prisma, row.id);
        const effect = now.partnerId ?? oldest.id;
        await recordStrays(
          now,
          live.filter((s) => s.id !== effect),
        );
        deps.log.info({ actionId: row.id, partnerId: effect }, 'reconciliation found the effect');
        const kept = live.find((s) => s.id === effect) ?? oldest;
        return { found: true, partnerId: kept.id, partnerState: kept.status };
      }
      const settleInMs = await settleRemainingMs(prisma, row.id);
      if (settleInMs > 0) return { found: false, attempts: row.attempts, settleInMs };
      // Conditional on the count and the window seen: a late call counted meanwhile (a stale
      // attempt that was still current) reopens the window, and this looks again.
      const next = input.onAbsent === 'retry' ? 'attempting' : 'not_applied';
      if (!(await recordNoEffect(prisma, row.id, row.attempts, next)))
        return { found: false, attempts: row.attempts, settleInMs: 1_000 };
      deps.log.info({ actionId: row.id, next }, 'reconciliation found no effect');
      return { found: false, attempts: row.attempts };
    },
  };
}
