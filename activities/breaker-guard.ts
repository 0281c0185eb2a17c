/**
 * Partner calls through their downstream's shared circuit breaker and retry budget (R8,
 * db/breaker.ts): a refused call never reaches the partner and fails with CircuitOpen, whose
 * retry delay is when to ask again, so Temporal waits instead of hammering a partner that is down.
 */
import { ApplicationFailure } from '@temporalio/activity';
import {
  admitCall,
  recordFailure,
  recordTrial,
  type Refusal,
  releaseTrial,
  type Transition,
} from '../db/breaker.ts';
import type { DownstreamSettings } from '../db/downstreams.ts';
import { errorMessage } from '../runtime/errors.ts';
import type { ActivityDeps } from './deps.ts';
import { classify, failure } from './errors.ts';
import { stoppedByUs } from './local-stop.ts';
import { engineSql } from '../db/transaction.ts';

/** The failures that say a partner is unwell: only these count toward opening its breaker. */
export const UNWELL_ERROR_TYPES: ReadonlySet<string> = new Set([
  'Timeout',
  'NetworkError',
  'UpstreamUnavailable',
  'RateLimited',
]);

/** Whether `err` (as thrown by a partner call) says the partner is unwell. */
export function isUnwell(err: unknown): boolean {
  if (stoppedByUs(err)) return false;
  const classified = classify(err, 'partner call');
  return classified instanceof ApplicationFailure && UNWELL_ERROR_TYPES.has(classified.type ?? '');
}

const REFUSALS: Record<Refusal, { code: string; says: string }> = {
  open: { code: 'BREAKER_OPEN', says: 'its circuit breaker is open' },
  forced_open: { code: 'BREAKER_FORCED_OPEN', says: 'an operator opened its circuit breaker' },
  trials_busy: { code: 'BREAKER_TRIALS_BUSY', says: 'its breaker is half-open and its trial calls are out' },
  retry_budget: { code: 'RETRY_BUDGET_EXHAUSTED', says: 'its retry budget is spent' },
};

/**
 * A refusal's wait, stretched by up to half at random: the runs refused together would otherwise
 * all come back at the same instant, and once the breaker closes they would reach the partner as
 * one burst.
 */
export function spread(waitMs: number, random: () => number = Math.random): number {
  return Math.round(waitMs * (1 + random() / 2));
}

/** What {@link throughBreaker} needs of the call it guards. */
export interface GuardedCall {
  settings: DownstreamSettings;
  /** The first call of a retried attempt: counted against the retry budget. */
  retry: boolean;
  /** What the call is, for the refusal's message (never a URL). */
  what: string;
}

/** A call the breaker let through: what settling its outcome needs. */
export interface AdmittedCall {
  settings: DownstreamSettings;
  trial: boolean;
}

/**
 * Asks the breaker of `guard.settings` to let one call through (counting it when it does).
 * @throws ApplicationFailure CircuitOpen (`BREAKER_OPEN`, `BREAKER_FORCED_OPEN`,
 *   `BREAKER_TRIALS_BUSY`, `RETRY_BUDGET_EXHAUSTED`) with `retryAfterMs`: do not call.
 */
export async function admitPartnerCall(
  deps: Pick<ActivityDeps, 'prisma' | 'metrics'>,
  guard: GuardedCall,
): Promise<AdmittedCall> {
  const { settings } = guard;
  const downstream = settings.id;
  const admission = await admitCall(engineSql(deps.prisma), settings, guard.retry);
  if (admission.admitted) return { settings, trial: admission.trial };
  deps.metrics.breakerRefusedCalls.inc({ downstream, reason: admission.refusal });
  if (admission.refusal === 'retry_budget') deps.metrics.retryBudgetExhausted.inc({ downstream });
  const { code, says } = REFUSALS[admission.refusal];
  throw failure('CircuitOpen', code, `${guard.what}: not called, ${says} (downstream ${downstream})`, {
    retryAfterMs: spread(admission.waitMs),
  });
}

/**
 * Runs `call`, admitted already, and records its outcome at the breaker: an unwell failure (may
 * open it), a trial's success or failure (closes or re-opens it). A failure to record is logged,
 * never put in place of the call's own outcome. @throws what `call` throws.
 */
export async function settledCall<T>(
  deps: Pick<ActivityDeps, 'prisma' | 'metrics' | 'log'>,
  admitted: AdmittedCall,
  call: () => Promise<T>,
): Promise<T> {
  const { settings, trial } = admitted;
  const downstream = settings.id;
  let value: T;
  try {
    value = await call();
  } catch (err) {
    const unwell = isUnwell(err);
    if (trial && stoppedByUs(err)) {
      // Stopped by our side, it says nothing of the partner: its trial place goes to the next call.
      await recorded(deps, downstream, async () => {
        await releaseTrial(engineSql(deps.prisma), downstream);
        return undefined;
      });
    } else if (trial) {
      await recorded(deps, downstream, () => recordTrial(engineSql(deps.prisma), settings, !unwell));
    } else if (unwell) {
      await recorded(deps, downstream, () => recordFailure(engineSql(deps.prisma), settings));
    }
    throw err;
  }
  if (trial) await recorded(deps, downstream, () => recordTrial(engineSql(deps.prisma), settings, true));
  return value;
}

/**
 * Runs `call` when the breaker of `guard.settings` lets it through ({@link admitPartnerCall}) and
 * records its outcome ({@link settledCall}).
 * @throws ApplicationFailure CircuitOpen without calling; else what `call` throws.
 */
export async function throughBreaker<T>(
  deps: Pick<ActivityDeps, 'prisma' | 'metrics' | 'log'>,
  guard: GuardedCall,
  call: () => Promise<T>,
): Promise<T> {
  return settledCall(deps, await admitPartnerCall(deps, guard), call);
}

async function recorded(
  deps: Pick<ActivityDeps, 'metrics' | 'log'>,
  downstream: string,
  write: () => Promise<Transition | undefined>,
): Promise<void> {
  try {
    const transition = await write();
    if (!transition) return;
    deps.metrics.breakerTransitions.inc({ downstream, from: transition.from, to: transition.to });
    deps.log.warn({ downstream, ...transition }, 'circuit breaker changed state');
  } catch (err) {
    deps.log.warn({ downstream, err: errorMessage(err) }, 'could not record a partner call at the breaker');
  }
}
