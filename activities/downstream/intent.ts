/**
 * Which action a claim of a run acts on (R4): its own intent row, written before any call, or the
 * action an earlier claim of the run left open — adopted when it took effect, so that a reset or
 * a run taken up again goes on with the effect that exists instead of making a second one.
 */
import {
  adoptAction,
  findActionByKey,
  findOwnOrEarlierOpenAction,
  insertIntent,
  restoreForgottenRounds,
} from '../../db/ledger/intent.ts';
import { idempotencyKeyFor, jobTypeOf } from '../../contract/business-key.ts';
import type {
  AdoptActionInput,
  DownstreamActionView,
  RecordIntentInput,
  RecordIntentResult,
} from '../../contract/types.ts';
import type { ActivityDeps } from '../deps.ts';
import { loadAction, view } from './ledger.ts';
import { failure } from '../errors.ts';
import { leaseLost, renewLease } from '../run/lease.ts';
import { engineSql } from '../../db/transaction.ts';

/** Earlier claims' states a later claim settles itself (the others wait for an operator). */
const SETTLEABLE_EARLIER: ReadonlySet<string> = new Set([
  'attempting',
  'unknown',
  'confirmed',
  'compensating',
]);

export function createIntentActivities(deps: ActivityDeps) {
  // The engine's statements skip the Prisma client (db/transaction.ts).
  const db = engineSql(deps.prisma);
  return {
    /**
     * The action of this claim: the row this claim owns (its own, or one it adopted), else a new
     * intent row (state `attempting`, no call made yet). Fenced by the run's lease, which it renews
     * (recording the execution that holds it: a reset to a later workflow task keeps the token).
     * When an earlier claim of the run left the action unsettled, the earlier row is returned as
     * `{ kind: 'earlier' }` for the workflow to settle first (with `settleEarlier`), since acting
     * again could double the effect. Idempotent.
     * @throws ApplicationFailure LeaseLost; InvalidInput EARLIER_ACTION_UNSETTLED when the earlier
     *   action waits for an operator (`needs_manual`), or always without `settleEarlier`.
     */
    async recordDownstreamIntent(input: RecordIntentInput): Promise<RecordIntentResult> {
      await renewLease(db, input, deps.leaseTtlMs);
      const businessKey = idempotencyKeyFor({
        jobType: jobTypeOf(input),
        sourceId: input.sourceId,
        businessDate: input.businessDate,
      });
      // A run whose database lost what its workflow did: the earlier rounds' calls it forgot are
      // looked up (as earlier claims' unknown outcomes) before this claim may call.
      if (input.settleEarlier) await restoreForgottenRounds(db, input, { ...input, businessKey });
      const found = await findOwnOrEarlierOpenAction(deps.prisma, input, input.round);
      if (found?.round === input.round) return view(found);
      if (found) {
        // An earlier claim's action, still open.
        if (input.settleEarlier && SETTLEABLE_EARLIER.has(found.state)) {
          return { kind: 'earlier', action: view(found) };
        }
        throw failure(
          'InvalidInput',
          'EARLIER_ACTION_UNSETTLED',
          `an earlier ${input.action} of this run (compensation ${found.id}) is ${found.state}: settle it first (durable-fetch compensations show ${found.id})`,
        );
      }
      // Also the reference the partner is given: one per action and claim, so that an earlier
      // claim's compensation looking up its own reference never finds (and voids) this one's.
      const key = `${businessKey}:${input.action}:r${input.round}`;
      const inserted = await insertIntent(db, input, {
        businessKey,
        key,
        round: input.round,
        action: input.action,
        step: input.step,
      });
      if (inserted) return view(inserted);
      // Written meanwhile by another attempt of this claim, or the fence no longer holds.
      const row = await findActionByKey(deps.prisma, key);
      if (!row) throw leaseLost(input);
      return view(row);
    },

    /**
     * Takes an earlier claim's confirmed action over for this claim (a reset or a restart of the
     * run goes on with the effect that exists instead of making a second one): its round becomes
     * this claim's, so this claim confirms it and, should the run fail, compensates it. Fenced by
     * the run's lease. Idempotent.
     * @throws ApplicationFailure LeaseLost.
     */
    async adoptDownstreamAction(input: AdoptActionInput): Promise<DownstreamActionView> {
      const adopted = await adoptAction(db, input, input.actionId, input.round);
      const row = await loadAction(deps.prisma, input.actionId);
      if (adopted) {
        deps.log.info(
          { actionId: row.id, partnerId: row.partnerId, round: input.round },
          'an earlier claim’s downstream effect adopted',
        );
      } else if (row.round !== input.round) {
        await renewLease(db, input, deps.leaseTtlMs);
      }
      return view(row);
    },
  };
}
