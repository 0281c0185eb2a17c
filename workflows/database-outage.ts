/**
 * Outages a run outlasts instead of failing. Our own database being unavailable — a failover, a
 * maintenance window, a restart — and a partner's circuit breaker holding its calls back (R8: the
 * partner is down, or an operator opened the breaker) pause a run. Activities retry
 * `DatabaseUnavailable` and `CircuitOpen` within their preset; a step that still ends with one is
 * run again after a wait (every step is repeat-safe, and a call the breaker refused was never
 * made), for up to {@link BRIEF_DATABASE_OUTAGE_WAITS} or {@link BREAKER_WAITS} waits, after which the
 * failure ends the run like any other (its end is then recorded once the database is back: the
 * `recordOutcome` preset never gives up). An OAuth2 credential whose provider refused its refresh
 * token (`PermissionDenied` CREDENTIAL_NEEDS_REAUTHORIZATION) pauses a run the same way, until an
 * operator sets a new token, for up to {@link REAUTHORIZATION_WAITS} waits. The run's maximum run
 * time bounds all three.
 */
import { ApplicationFailure, log, patched, sleep } from '@temporalio/workflow';
import { NEEDS_REAUTHORIZATION } from '../contract/error-types.ts';
import { type FetchStatus, setStatus } from './outcome.ts';

/**
 * Wait between one try of a step and the next while the database is unavailable, in executions
 * recorded before {@link BRIEF_PATCH}: the step's next try then came up to 30 s after the database
 * answered again.
 */
export const DATABASE_WAIT = '30 seconds';

/**
 * The wait now: 1–3 s at random (the workflow's seeded random, so a replay waits the same), so
 * that a step whose attempts ran out during the outage is tried again within a few seconds of the
 * database answering, and the runs that waited together do not all come back at the same instant.
 * The activity's own retries ask every second or so too (activities/retry/timing.ts).
 */
export const DATABASE_WAIT_MS = { min: 1_000, max: 3_000 } as const;

/** Waits per step at most, in executions recorded before {@link BRIEF_PATCH}: an hour of 30 s waits. */
export const DATABASE_OUTAGE_WAITS = 120;

/**
 * Waits per step at most now: each follows a step's attempts (20 of the database preset's, about a
 * second apart), so 180 still cover an hour of outage, at about 6 history events each.
 */
export const BRIEF_DATABASE_OUTAGE_WAITS = 180;

/**
 * Waits per step at most behind an open breaker: each follows a whole activity's attempts (up to
 * 10 of them a breaker's open time apart), so 120 cover many hours while adding ~6 events each.
 */
export const BREAKER_WAITS = 120;

/** The wait behind an open breaker: what its refusal said (the time until half-open), 1 s – 5 min. */
const BREAKER_WAIT_MS = { min: 1_000, max: 300_000, fallback: 30_000 } as const;

/**
 * The wait while a credential needs reauthorization: 10 s, doubling up to 5 min (each longer by
 * up to a fifth at random, at most 5 min). Short at first, so that a run whose credential an
 * operator sets again at once goes on within seconds; at most 5 min, the default lease time,
 * because each try renews the run's lease and a run whose lease ran out looks abandoned to the
 * sweeps. A try costs one activity that reads the credential's row: no token call, no partner call.
 */
export const REAUTHORIZATION_WAIT_MS = { first: 10_000, max: 300_000 } as const;

/**
 * Waits at most per workflow execution, a little over 24 hours of them; the failure then ends the
 * run as a dead letter. Per execution, not per step: a history then holds at most this many, at
 * about 9 to 11 events each (at most about 3,300 events), however many pages it stores. An
 * execution stores up to DEFAULT_PAGES_PER_EXECUTION pages before it continues as new, so a run
 * waits at most about a day per that many pages, and its maximum run time bounds it whole.
 */
export const REAUTHORIZATION_WAITS = 300;

// Per execution: Temporal gives every workflow execution its own module globals.
let reauthorizationWaits = 0;

/** Patch ids of these behaviours: histories recorded before them fail the run at once instead. */
const PATCH = 'outlast-database-outage';
const BRIEF_PATCH = 'outlast-database-outage-briefly';
const BREAKER_PATCH = 'outlast-open-breaker';
const REAUTHORIZATION_PATCH = 'wait-for-reauthorization';

export interface OutageOptions {
  /**
   * The `FetchStatus` the workflow shows while the step runs: while the step waits for a
   * credential's reauthorization the workflow shows `awaiting_reauthorization` instead, and this
   * again once the step got past it. Without it, such a wait changes no status.
   */
  status?: FetchStatus;
}

/**
 * Runs `step`, and again after a wait each time it fails with DatabaseUnavailable (after
 * {@link DATABASE_WAIT_MS}) or CircuitOpen (after the wait its refusal names); `rerun` tells the
 * step it runs again after its partner's breaker held it back, so that its first partner call
 * repeats one asked for before (a retry for R8's budget). A wait for our own database does not
 * say so: the step's attempts failed on the database, mostly before asking the partner anything,
 * and a database outage must not spend the partner's retry budget. A wait for a credential's
 * reauthorization ({@link reauthorizationWait}) does not say so either: the try that failed asked
 * the partner nothing.
 */
export async function outlastingOutages<T>(
  what: string,
  step: (rerun: boolean) => Promise<T>,
  options: OutageOptions = {},
): Promise<T> {
  let databaseWaits = 0;
  let breakerWaits = 0;
  let credentialWaits = 0;
  for (;;) {
    try {
      const result = await step(breakerWaits > 0);
      if (credentialWaits > 0) {
        log.info('credential reauthorized: the step went on', { step: what, waits: credentialWaits });
        if (options.status) setStatus(options.status);
      }
      return result;
    } catch (err) {
      const cause = outageOf(err);
      if (cause?.type === 'DatabaseUnavailable' && patched(PATCH) && databaseWaits < databaseWaitLimit()) {
        databaseWaits++;
        const waitMs = databaseWait();
        log.warn('database unavailable: the step runs again after a wait', {
          step: what,
          waits: databaseWaits,
          waitMs,
        });
        await sleep(waitMs);
      } else if (cause?.type === 'CircuitOpen' && breakerWaits < BREAKER_WAITS && patched(BREAKER_PATCH)) {
        breakerWaits++;
        const waitMs = breakerWait(cause);
        log.warn('partner calls held back by its circuit breaker: the step runs again after a wait', {
          step: what,
          waits: breakerWaits,
          waitMs,
        });
        await sleep(waitMs);
      } else if (
        cause?.type === 'PermissionDenied' &&
        reauthorizationWaits < REAUTHORIZATION_WAITS &&
        patched(REAUTHORIZATION_PATCH)
      ) {
        reauthorizationWaits++;
        credentialWaits++;
        const waitMs = reauthorizationWait(credentialWaits);
        // Once per stretch of waiting: the status says it, the log line names the credential.
        if (credentialWaits === 1) {
          if (options.status) setStatus('awaiting_reauthorization');
          log.warn('an OAuth2 credential needs reauthorization: the step runs again after a wait', {
            step: what,
            reason: cause.message,
            waitMs,
          });
        }
        await sleep(waitMs);
      } else {
        throw err;
      }
    }
  }
}

/**
 * The failure of an outage a step ended with: its own, or the last attempt's behind Temporal's
 * own timeout (an attempt to a database that does not answer can run into the step's deadline).
 * A `PermissionDenied` is one only with the code of a credential that needs reauthorization.
 */
function outageOf(err: unknown): ApplicationFailure | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; depth++) {
    if (e instanceof ApplicationFailure) {
      const code = (e.details?.[0] as { code?: unknown } | undefined)?.code;
      const outage =
        e.type === 'DatabaseUnavailable' ||
        e.type === 'CircuitOpen' ||
        (e.type === 'PermissionDenied' && code === NEEDS_REAUTHORIZATION);
      return outage ? e : undefined;
    }
    e = e.cause;
  }
  return undefined;
}

function databaseWaitLimit(): number {
  return patched(BRIEF_PATCH) ? BRIEF_DATABASE_OUTAGE_WAITS : DATABASE_OUTAGE_WAITS;
}

/** Decided at the first wait (where the patch marker goes) and kept by every later one. */
function databaseWait(): number | string {
  if (!patched(BRIEF_PATCH)) return DATABASE_WAIT;
  const { min, max } = DATABASE_WAIT_MS;
  return min + Math.floor(Math.random() * (max - min));
}

function breakerWait(failure: ApplicationFailure): number {
  const [details] = (failure.details ?? []) as { retryAfterMs?: unknown }[];
  const asked = details?.retryAfterMs;
  const ms = typeof asked === 'number' && Number.isFinite(asked) ? asked : BREAKER_WAIT_MS.fallback;
  return Math.min(BREAKER_WAIT_MS.max, Math.max(BREAKER_WAIT_MS.min, Math.round(ms)));
}

/**
 * The `n`th wait (1-based) of one step for a credential's reauthorization, in ms: 10 s doubling,
 * longer by up to a fifth at random, at most 5 min. In a workflow, `Math.random` is the seeded
 * one: a replay waits the same.
 */
export function reauthorizationWait(n: number): number {
  const { first, max } = REAUTHORIZATION_WAIT_MS;
  const base = first * 2 ** Math.min(n - 1, 16);
  return Math.min(max, Math.round(base * (1 + Math.random() / 5)));
}
