/**
 * Partner calls through their downstream's shared circuit breaker and retry budget (R8,
 * db/retry/breaker.ts): a refused call never reaches the partner and fails with CircuitOpen, whose
 * retry delay is when to ask again, so Temporal waits instead of hammering a partner that is down.
 * A call let through that fails while the breaker holds the partner as down (a failed trial, or
 * a failure with the breaker open right after it) ends its attempt the same way: whichever of
 * the two a step's last attempt meets, the workflow outlasts the outage (R7, R8).
 */
import { ApplicationFailure, type Info } from '@temporalio/activity';
import {
  type Admission,
  admitCall,
  type BreakerHold,
  readHold,
  recordFailure,
  recordTrial,
  type Refusal,
  releaseTrial,
  type Transition,
  trialWait,
} from '../../db/retry/breaker.ts';
import type { DownstreamSettings } from '../../db/ledger/downstreams.ts';
import { errorMessage } from '../../runtime/errors.ts';
import type { ActivityDeps } from '../deps.ts';
import { classify, detailsOf, failure } from '../errors.ts';
import { stoppedByUs } from '../pages/local-stop.ts';
import { engineSql } from '../../db/transaction.ts';

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
  /**
   * A call that repeats one an earlier attempt asked for ({@link firstCallIsRetry}): counted
   * against the retry budget.
   */
  retry: boolean;
  /** What the call is, for the refusal's message (never a URL). */
  what: string;
  /**
   * Called once the breaker has answered, whether it let the call through or refused it: from
   * then on the call was meant for the partner, and the attempt after this one repeats it. Not
   * called when the admission itself failed (our database): nothing was asked of the partner.
   */
  onAnswered?: () => void;
}

/**
 * Heartbeat details of an activity that calls a partner, as its next attempt reads them
 * (`Context.info.heartbeatDetails`): `partnerAsked` says an earlier attempt asked the breaker to
 * call the partner (let through or refused) and has no answer to show for it. An activity sets it
 * by heartbeating right after the breaker answers; the SDK flushes an attempt's last heartbeat
 * before reporting its failure and the server keeps it for the next attempt (sdk-core
 * `WorkerActivityTasks::complete`: the failure carries `last_heartbeat_details`).
 */
export interface PartnerAsked {
  partnerAsked?: boolean;
}

/** The identity of a local activity's attempts in their worker: its execution and activity id. */
type LocalAttempt = Partial<Pick<Info, 'workflowExecution' | 'activityId'>>;

/**
 * What a local activity's attempt leaves for the next one (`partnerAsked`), kept in the worker: a
 * local activity has no heartbeat details, but the SDK runs the retries that wait less than its
 * local retry threshold in the same worker, under the same activity id (a page's fetch after our
 * database failed before the call: waits of at most 2 s). An attempt that finds nothing here (its
 * workflow task moved to another worker, or its retry waited on a timer as a new local activity)
 * counts its first call as a retry. Bounded: past {@link LOCAL_ASKED_MAX} the oldest entry goes.
 */
const localAsked = new Map<string, boolean>();
const LOCAL_ASKED_MAX = 10_000;

const localKey = (info: LocalAttempt): string | undefined =>
  info.workflowExecution && info.activityId
    ? `${info.workflowExecution.runId}/${info.activityId}`
    : undefined;

/**
 * Records whether this local attempt asked the partner for a call it has no answer for (`asked`),
 * for its next attempt in this worker; `undefined` forgets it (the step succeeded).
 */
export function rememberLocalAsked(info: LocalAttempt, asked: boolean | undefined): void {
  const key = localKey(info);
  if (key === undefined) return;
  localAsked.delete(key);
  if (asked === undefined) return;
  localAsked.set(key, asked);
  if (localAsked.size > LOCAL_ASKED_MAX) {
    const oldest = localAsked.keys().next().value;
    if (oldest !== undefined) localAsked.delete(oldest);
  }
}

/**
 * Whether the first partner call of the current attempt is a retry for the retry budget (R8): an
 * earlier attempt of the same activity asked for a call it got no answer for. A first attempt, or
 * one after attempts that failed before asking (our database down), is not. An activity task
 * learns it from its heartbeat details; a local one from what its last attempt left in this
 * worker ({@link rememberLocalAsked}). An attempt with nothing to go by counts: a local one whose
 * last attempt ran elsewhere, or one after an attempt that heartbeated without saying (an older
 * build).
 */
export function firstCallIsRetry(
  info: Pick<Info, 'attempt' | 'isLocal' | 'heartbeatDetails'> & LocalAttempt,
): boolean {
  if (info.attempt <= 1) return false;
  if (info.isLocal) {
    const key = localKey(info);
    return (key === undefined ? undefined : localAsked.get(key)) ?? true;
  }
  const details: unknown = info.heartbeatDetails;
  if (details === undefined || details === null) return false;
  if (typeof details === 'object' && 'partnerAsked' in details) {
    return (details as PartnerAsked).partnerAsked === true;
  }
  return true;
}

/** The codes of a failed call that the breaker holds back, and what each says. */
const HELD: Record<'trial' | 'open', { code: string; says: string }> = {
  trial: { code: 'TRIAL_FAILED', says: 'it failed as a trial call of its circuit breaker' },
  open: { code: 'FAILED_BREAKER_OPEN', says: 'its circuit breaker is open' },
};

/**
 * What an attempt reports for `partner`, the classified unwell failure of a call that the breaker
 * let through (`trial`: as a half-open trial), given how the breaker stood right after the
 * failure was recorded (`hold`). A call that was no trial, with the breaker still closed: the
 * partner's own failure, retried within its preset as any. Otherwise CircuitOpen — `TRIAL_FAILED`
 * (the partner was held as down when the call went: its trial failed, whatever another trial did
 * meanwhile) or `FAILED_BREAKER_OPEN` — keeping the partner's words and waiting the longer of the
 * breaker's wait (spread as a refusal's) and the partner's own Retry-After. So a step's last
 * attempt that meets an outage ends as a refused one does, and the workflow waits and runs the
 * step again (workflows/database-outage.ts) instead of dead-lettering it. Pure.
 */
export function heldBackFailure(
  partner: ApplicationFailure,
  trial: boolean,
  hold: BreakerHold,
  settings: DownstreamSettings,
  random: () => number = Math.random,
): ApplicationFailure {
  if (hold.state === 'closed' && !trial) return partner;
  const { code, says } = HELD[trial ? 'trial' : 'open'];
  const breakerMs = hold.state === 'closed' ? trialWait(settings) : hold.waitMs;
  const askedMs = detailsOf(partner)?.retryAfterMs ?? 0;
  return failure(
    'CircuitOpen',
    code,
    `${partner.message} (${partner.type ?? 'Internal'}); waits for the partner's breaker: ${says} (downstream ${settings.id})`,
    { retryAfterMs: Math.max(askedMs, spread(breakerMs, random)) },
  );
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
  /** The breaker's answer for this call, when a statement before it asked already (with `guard.retry` false). */
  given?: Admission,
): Promise<AdmittedCall> {
  const { settings } = guard;
  const downstream = settings.id;
  const admission = given ?? (await admitCall(engineSql(deps.prisma), settings, guard.retry));
  guard.onAnswered?.();
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
 * never put in place of the call's own outcome.
 * @throws what `call` throws, classified; an unwell failure of a trial, or one after which the
 *   breaker is not closed, as CircuitOpen `TRIAL_FAILED` / `FAILED_BREAKER_OPEN` with the
 *   breaker's wait ({@link heldBackFailure}).
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
    if (unwell) throw await heldBack(deps, admitted, err);
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
  given?: Admission,
): Promise<T> {
  return settledCall(deps, await admitPartnerCall(deps, guard, given), call);
}

/**
 * `err`, an unwell failure of an admitted call, as the attempt reports it given the breaker as it
 * stands now ({@link heldBackFailure}). The breaker unreadable: `err` as it was (logged).
 */
async function heldBack(
  deps: Pick<ActivityDeps, 'prisma' | 'log'>,
  admitted: AdmittedCall,
  err: unknown,
): Promise<unknown> {
  const partner = classify(err, 'partner call');
  if (!(partner instanceof ApplicationFailure)) return err;
  try {
    const hold = await readHold(engineSql(deps.prisma), admitted.settings);
    return heldBackFailure(partner, admitted.trial, hold, admitted.settings);
  } catch (readErr) {
    const downstream = admitted.settings.id;
    deps.log.warn(
      { downstream, err: errorMessage(readErr) },
      'could not read the breaker after a failed call',
    );
    return err;
  }
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
