/**
 * The run's calls of a non-idempotent downstream action (R4): the call counted (and its settle
 * window set) immediately before it is sent, its outcome recorded after; then the recorded effect
 * confirmed (repeat-safe by the partner's id).
 */
import { performance } from 'node:perf_hooks';
import { Context } from '@temporalio/activity';
import { recordStray } from '../../db/ledger/ledger.ts';
import {
  countCall,
  markOutcomeLost,
  recordCallFailed,
  recordConfirmed,
  recordSubmission,
} from '../../db/ledger/submit.ts';
import type { ErrorType } from '../../contract/error-types.ts';
import type { ConfirmSubmissionInput, SubmitSummaryInput } from '../../contract/types.ts';
import { crashPoint } from '../../runtime/crash-points.ts';
import type { ActivityDeps } from '../deps.ts';
import type { PartnerCalls } from './calls.ts';
import { errorFields, loadAction, loadActionState, outcomeUnknown } from './ledger.ts';
import { failure } from '../errors.ts';
import { renewLease, renewLeaseWithSource } from '../run/lease.ts';
import { enabledSource, loadEnabledSource } from '../sources.ts';
import type { DownstreamEffect } from '../job-api/define.ts';
import { engineSql } from '../../db/transaction.ts';

/**
 * Answers that prove the partner did nothing: it refused the request as such. Anything else that
 * is not a 2xx (a timeout, a reset, a 5xx, a 429, a 2xx we cannot read) may hide an effect.
 */
const REJECTIONS: ReadonlySet<string> = new Set<ErrorType>(['InvalidInput', 'PermissionDenied', 'NotFound']);

export function createSubmitActivities(deps: ActivityDeps, calls: PartnerCalls) {
  // The engine's statements skip the Prisma client (db/transaction.ts).
  const db = engineSql(deps.prisma);

  return {
    /**
     * Makes the job's downstream call (its `submit` hook, given the run's counts only),
     * which is NOT idempotent. Made only when the row says exactly `expectedAttempts` calls were
     * made before: more means an earlier attempt died, or froze, with its outcome unknown. The
     * call is counted immediately before it is sent, in the same statement that re-checks that
     * this attempt is still current (state, count, lease) and sets the call's settle window; the
     * request must then start being sent before the window's send deadline, or it is not sent at
     * all. The partner's id is recorded after; a stale attempt whose call took effect after the
     * ledger moved on records it as a stray, to be voided.
     * @throws ApplicationFailure OutcomeUnknown (non-retryable) whenever the effect may exist
     *   without our knowing its id: the workflow reconciles by reference, never calls blindly;
     *   InvalidInput/PermissionDenied/NotFound when the partner refused outright (`not_applied`);
     *   LeaseLost; CircuitOpen (retryable) when the downstream's breaker refused the call before
     *   it was counted: nothing was sent.
     */
    async submitSummary(input: SubmitSummaryInput): Promise<{ partnerId: string }> {
      const source = await loadEnabledSource(deps.prisma, input.sourceId);
      const { connectTimeoutMs, responseTimeoutMs } = deps.http.options;
      // Be very careful: the settle window must outlast every moment at which this call can still
      // take effect. It is sent before `sendBy` (connect + response timeouts after a moment taken
      // BEFORE the count, so at or before the database's now() below) and the partner applies it
      // at most its maximum processing time after receiving it.
      const sendWindowMs = connectTimeoutMs + responseTimeoutMs;
      const settleMs = sendWindowMs + source.submitMaxProcessingMs;
      // Asked before the call is counted: a call the breaker refuses is never counted, so the
      // next attempt finds the ledger as this one did and calls (R8) instead of reconciling.
      const admitted = await calls.admit(source, 'submit');
      const countedFrom = performance.now();
      let intent: Awaited<ReturnType<typeof countCall>>;
      try {
        intent = await countCall(db, input, {
          actionId: input.actionId,
          expectedAttempts: input.expectedAttempts,
          settleMs,
        });
      } catch (err) {
        await calls.release(admitted);
        throw err;
      }
      if (!intent) {
        // Nothing to send: the breaker's trial place, if this was one, goes back.
        await calls.release(admitted);
        return settledBefore(input);
      }
      const counted = input.expectedAttempts + 1;
      deps.log.info(
        { actionId: input.actionId, reference: intent.reference, call: counted },
        'downstream call sent',
      );

      let submission: DownstreamEffect;
      try {
        submission = await calls.call(
          source,
          'submit',
          (action, ctx) =>
            action.submit({
              ...ctx,
              reference: intent.reference,
              run: {
                fetchRunId: input.fetchRunId,
                sourceId: source.id,
                businessDate: intent.business_date,
                pages: intent.pages,
                records: intent.records,
              },
              sendBy: countedFrom + sendWindowMs,
            }),
          admitted,
        );
      } catch (err) {
        const { type, message } = errorFields(err, `partner ${source.id} submit`);
        if (REJECTIONS.has(type)) {
          await recordCallFailed(db, input.actionId, counted, 'not_applied', { type, message });
          throw err;
        }
        // Only while no later call was counted: a superseded attempt must not reopen a settled row.
        await recordCallFailed(db, input.actionId, counted, 'unknown', { type, message });
        deps.log.warn({ actionId: input.actionId, errorType: type }, 'downstream outcome unknown');
        // A cancelled run stops here; its compensation reconciles the row.
        if (Context.current().cancellationSignal.aborted) throw err;
        throw outcomeUnknown(`${message}; the submission may exist: reconcile by reference`);
      }
      crashPoint(deps.crashPoint, 'after-submit');
      // This call's answer is authoritative while no later call was made: it records the id even
      // when another attempt marked the row unknown meanwhile (and waits for a lookup).
      if (await recordSubmission(db, input.actionId, counted, submission)) {
        deps.log.info(
          { actionId: input.actionId, partnerId: submission.id },
          'downstream submission recorded',
        );
        return { partnerId: submission.id };
      }
      const row = await loadAction(deps.prisma, input.actionId);
      // A lookup found and recorded this very submission first: nothing is amiss.
      if (row.partnerId === submission.id) return { partnerId: submission.id };
      // The ledger moved on (a later call, or "not applied" concluded) before this call took effect.
      await recordStray(
        db,
        row,
        { partnerId: submission.id, partnerState: submission.status },
        'a superseded attempt’s call took effect after the ledger moved on',
      );
      deps.metrics.downstreamStrays.inc({ source: source.id });
      deps.log.error(
        { actionId: input.actionId, partnerId: submission.id },
        'a superseded attempt made a submission the ledger did not expect: recorded as a stray, to be voided',
      );
      throw outcomeUnknown(
        'this attempt was superseded after its call; its submission is a stray, to be voided',
      );
    },

    /**
     * Confirms the recorded effect with the job's `confirm` hook (repeat-safe by id; none: final already),
     * fenced by the run's lease (renewed, with the execution that holds it). A regular activity, or
     * a local one beside local page fetches (workflows/submit-summary.ts).
     * @throws ApplicationFailure LeaseLost; the HTTP client's typed failures (a 409 for a voided
     *   submission is InvalidInput, permanent).
     */
    async confirmSubmission(input: ConfirmSubmissionInput): Promise<void> {
      calls.localAttempt.begin();
      const renewed = await renewLeaseWithSource(db, input, deps.leaseTtlMs, input.sourceId);
      const source = enabledSource(renewed, input.sourceId);
      const row = await loadActionState(deps.prisma, input.actionId);
      if (!row.partnerId) throw failure('Internal', 'NO_PARTNER_ID', `action ${row.id} has no partner id`);
      const partnerId = row.partnerId;
      let confirmed: DownstreamEffect | undefined;
      try {
        confirmed = await calls.call(source, 'confirm', (action, ctx) =>
          // Submitting is final for an action without a confirm step: there is nothing to call.
          action.confirm ? action.confirm(ctx, partnerId) : Promise.resolve(undefined),
        );
      } catch (err) {
        await calls.noteError(row.id, err, `partner ${source.id} confirm`);
        throw err;
      }
      if (confirmed) await recordConfirmed(db, row.id, confirmed.status);
      calls.localAttempt.end();
    },
  };

  /** submitSummary found the row not as expected: say why, without calling the partner. */
  async function settledBefore(input: SubmitSummaryInput): Promise<{ partnerId: string }> {
    const row = await loadAction(deps.prisma, input.actionId);
    // An earlier attempt recorded its success, then its answer was lost.
    if (row.state === 'confirmed' && row.partnerId) return { partnerId: row.partnerId };
    await renewLease(db, input, deps.leaseTtlMs);
    if (row.state === 'not_applied') {
      throw failure(
        'InvalidInput',
        'SUBMIT_REJECTED',
        `the partner refused this submission: ${row.lastError ?? ''}`,
      );
    }
    // More calls counted than the workflow knows of (an earlier attempt died or froze after
    // counting), or the last call's outcome is unknown: look it up, never call on top of it.
    const counted = row.attempts > input.expectedAttempts;
    if (
      (row.state === 'attempting' && counted) ||
      (row.state === 'unknown' && row.attempts >= input.expectedAttempts)
    ) {
      await markOutcomeLost(db, row.id, row.attempts);
      throw outcomeUnknown('an earlier attempt of this submission ended without recording its outcome');
    }
    throw failure(
      'Internal',
      'LEDGER_STATE',
      `downstream action ${row.id} is ${row.state} after ${row.attempts} calls`,
    );
  }
}
