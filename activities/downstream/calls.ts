/**
 * How the ledger's activities call a job's downstream action: the source's job and its hooks, as
 * whom (the source's token, resolved at call time), with heartbeats (a hanging call still sees a
 * cancellation), the activity's cancellation signal, through the downstream's circuit breaker and
 * retry budget (R8), and the call counted for the source's metrics.
 */
import { Context } from '@temporalio/activity';
import { releaseTrial } from '../../db/retry/breaker.ts';
import { breakerScope } from '../../db/ledger/downstreams.ts';
import { recordLastError } from '../../db/ledger/ledger.ts';
import type { Source } from '../../prisma/generated/client.ts';
import type { ActivityDeps } from '../deps.ts';
import { errorFields } from './ledger.ts';
import { heartbeatEvery, heartbeatNow } from '../run/heartbeat.ts';
import { observed } from '../observe.ts';
import {
  admitPartnerCall,
  type AdmittedCall,
  firstCallIsRetry,
  type PartnerAsked,
  rememberLocalAsked,
  settledCall,
} from '../retry/breaker-guard.ts';
import { partnerCallSignal } from '../pages/local-stop.ts';
import { failure } from '../errors.ts';
import type { DownstreamAction, DownstreamContext } from '../job-api/define.ts';
import { inJob, jobOf, partnerAccess } from '../job-runtime.ts';

/**
 * What a hook's activity heartbeats once its breaker answered: its next attempt's first call is a
 * retry for R8's budget (activities/retry/breaker-guard.ts `firstCallIsRetry`). Never cleared: an
 * attempt that got its answer ends the activity, or fails after the call (a ledger write), and
 * the next attempt then asks the partner again (a lookup, a confirm).
 */
const ASKED: PartnerAsked = { partnerAsked: true };

export function createPartnerCalls(deps: ActivityDeps) {
  /**
   * Asks the breaker of the source's downstream (R8) to let one call of `hook` through: for a
   * caller that must know before it records the call (a non-idempotent submit). The first call of
   * an attempt is a retry only after an earlier attempt asked the breaker (not after one that
   * failed on our database before asking).
   * @throws ApplicationFailure CircuitOpen: do not call.
   */
  async function admit(source: Source, hook: string): Promise<AdmittedCall> {
    const settings = breakerScope(await deps.downstreams(source.downstream), source.id);
    const ctx = Context.current();
    return admitPartnerCall(deps, {
      settings,
      retry: firstCallIsRetry(ctx.info),
      what: `partner ${source.id} ${hook}`,
      onAnswered: () => {
        heartbeatNow(ctx, ASKED);
        if (ctx.info.isLocal) rememberLocalAsked(ctx.info, true);
      },
    });
  }

  return {
    admit,

    /**
     * For a hook run as a local activity (a confirm beside local page fetches), which has no
     * heartbeat details: keeps in this worker, for its next attempt, whether this attempt's first
     * call is a retry (`begin`, before anything can fail), and forgets it once the activity
     * succeeded (`end`). No-ops for an activity task.
     */
    localAttempt: {
      begin(): void {
        const { info } = Context.current();
        if (info.isLocal) rememberLocalAsked(info, firstCallIsRetry(info));
      },
      end(): void {
        const { info } = Context.current();
        if (info.isLocal) rememberLocalAsked(info, undefined);
      },
    },

    /** Gives back what `admit` let through when the call is not made after all (best effort). */
    async release(admitted: AdmittedCall): Promise<void> {
      if (!admitted.trial) return;
      await releaseTrial(deps.prisma, admitted.settings.id).catch(() => undefined);
    },

    /**
     * Runs one hook of the source's downstream action with heartbeats and the activity's cancel
     * signal, through its downstream's breaker (`admitted` by `admit` already, or asked here),
     * counting its outcome; what the hook throws is classified.
     * @throws ApplicationFailure InvalidInput `NO_DOWNSTREAM_ACTION` when the source's job has
     *   none; CircuitOpen when the breaker refuses the call (it is not made).
     */
    async call<T>(
      source: Source,
      hook: string,
      run: (action: DownstreamAction<unknown>, ctx: DownstreamContext<unknown>) => Promise<T>,
      admitted?: AdmittedCall,
    ): Promise<T> {
      const { job, view } = jobOf(deps, source);
      const action = job.downstream;
      if (!action) {
        throw failure('InvalidInput', 'NO_DOWNSTREAM_ACTION', `job '${job.type}' has no downstream action`);
      }
      const ctx = Context.current();
      // A local activity's call also stops with its stopping worker (activities/pages/local-stop.ts).
      const callSignal = partnerCallSignal(ctx, deps.stopping);
      const access = { ...partnerAccess(deps, source, callSignal.signal), source: view };
      let stopHeartbeats = () => {};
      try {
        const ticket = admitted ?? (await admit(source, hook));
        // Admitted by now: every heartbeat says the partner was asked.
        stopHeartbeats = heartbeatEvery(ctx, () => ASKED);
        return await settledCall(deps, ticket, () =>
          observed(
            deps,
            source.id,
            inJob(job, `downstream ${hook}`, () => run(action, access)),
          ),
        );
      } finally {
        stopHeartbeats();
        callSignal.release();
      }
    },

    /** Records the last failure on the row (best effort: the failure itself is what matters). */
    async noteError(actionId: string, err: unknown, what: string): Promise<void> {
      const { type, message } = errorFields(err, what);
      await recordLastError(deps.prisma, actionId, { type, message }).catch(() => 0);
    },
  };
}

export type PartnerCalls = ReturnType<typeof createPartnerCalls>;
