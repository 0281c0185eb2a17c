/**
 * The admission of a partner call through its downstream's circuit breaker and retry budget (R8):
 * one statement decides and counts it, with the database's clock, so every worker decides on the
 * same window (db/breaker.ts records what the call did).
 */
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { DownstreamSettings } from './downstreams.ts';

type Db = Pick<PrismaClient, '$queryRaw' | '$transaction'>;

/** Why a call was refused. */
export type Refusal = 'open' | 'forced_open' | 'trials_busy' | 'retry_budget';

/** What {@link admitCall} decided. */
export type Admission =
  | { admitted: true; trial: boolean }
  | { admitted: false; refusal: Refusal; waitMs: number; window: { calls: number; retries: number } };

const secs = (ms: number) => ms / 1000;

interface AdmissionRow {
  verdict: string;
  wait_ms: number | null;
  trial_won: boolean;
  calls: number;
  retries: number;
}

/** Held by a retry's admission to the end of its transaction (one lock per downstream). */
const BUDGET_LOCK = 'durable-fetch:retry-budget:';

/**
 * Lets one call to `settings.id` through or refuses it, and counts it when let through (a retry
 * also counts as a retry). Closed: every first attempt goes; a retry goes while the window's
 * retries stay within the budget (`max(minRetries, ratio × calls)`). Open: nothing goes until
 * `half_open_at`; then up to `trialCalls` trials go (half-open); a trial that never reports back
 * frees its place after the open time. Forced open (an operator): nothing goes. `waitMs` of a
 * refusal is when to ask again. Concurrent admissions of trials are settled by the row's lock,
 * those of retries by a lock per downstream held to the end of the admission's transaction: two
 * retries admitted at once would each read the window without the other's count, and retries that
 * were refused together wait alike and come back together, far over the budget.
 */
export async function admitCall(db: Db, settings: DownstreamSettings, retry: boolean): Promise<Admission> {
  const decide = admission(db, settings, retry);
  const rows = retry
    ? (
        await db.$transaction([
          db.$queryRaw`SELECT pg_advisory_xact_lock(hashtext(${BUDGET_LOCK + settings.id}))::text AS locked`,
          decide,
        ])
      )[1]
    : await decide;
  return verdictOf(settings, rows[0]);
}

/** The statement that decides and counts one admission (a first attempt's, or a retry's). */
function admission(db: Db, settings: DownstreamSettings, retry: boolean) {
  const { id, breaker, retryBudget } = settings;
  const open = secs(breaker.openMs);
  return db.$queryRaw<AdmissionRow[]>`
    WITH b AS (
      SELECT state, forced, half_open_at, half_open_since, trials_started FROM breaker WHERE downstream = ${id}
    ), w AS (
      SELECT COALESCE(sum(calls), 0)::int AS calls, COALESCE(sum(retries), 0)::int AS retries
        FROM downstream_calls
       WHERE downstream = ${id} AND second > now() - make_interval(secs => ${secs(retryBudget.windowMs)}::float8)
    ), decision AS (
      SELECT CASE
               WHEN b.state IS NULL OR b.state = 'closed' THEN
                 CASE WHEN ${retry}::boolean
                        AND w.retries + 1 > GREATEST(${retryBudget.minRetries}::int, ${retryBudget.ratio}::float8 * (w.calls + 1))
                      THEN 'retry_budget' ELSE 'closed' END
               WHEN b.forced THEN 'forced_open'
               WHEN b.state = 'open' AND b.half_open_at > now() THEN 'open'
               WHEN b.state = 'open' THEN 'trial'
               WHEN b.trials_started < ${breaker.trialCalls}::int
                 OR b.half_open_since <= now() - make_interval(secs => ${open}::float8) THEN 'trial'
               ELSE 'trials_busy'
             END AS verdict,
             CASE WHEN b.state = 'open' AND NOT b.forced
                  THEN GREATEST(0, EXTRACT(EPOCH FROM (b.half_open_at - now())) * 1000)::int END AS wait_ms
        FROM (SELECT 1) AS one LEFT JOIN b ON true CROSS JOIN w
    ), trial AS (
      UPDATE breaker
         SET state = 'half_open',
             trials_started = CASE WHEN state = 'open' OR half_open_since <= now() - make_interval(secs => ${open}::float8)
                                   THEN 1 ELSE trials_started + 1 END,
             half_open_since = CASE WHEN state = 'open' OR half_open_since <= now() - make_interval(secs => ${open}::float8)
                                    THEN now() ELSE half_open_since END,
             changed_at = CASE WHEN state = 'open' THEN now() ELSE changed_at END
       WHERE downstream = ${id} AND (SELECT verdict FROM decision) = 'trial' AND NOT forced
         AND ((state = 'open' AND half_open_at <= now())
           OR (state = 'half_open' AND (trials_started < ${breaker.trialCalls}::int
                 OR half_open_since <= now() - make_interval(secs => ${open}::float8))))
      RETURNING 1
    ), counted AS (
      INSERT INTO downstream_calls (downstream, second, calls, retries)
      SELECT ${id}, date_trunc('second', now()), 1, CASE WHEN ${retry}::boolean THEN 1 ELSE 0 END
        FROM decision
       WHERE verdict = 'closed' OR (verdict = 'trial' AND EXISTS (SELECT 1 FROM trial))
      ON CONFLICT (downstream, second) DO UPDATE
        SET calls = downstream_calls.calls + 1, retries = downstream_calls.retries + excluded.retries
      RETURNING 1
    )
    SELECT d.verdict, d.wait_ms, EXISTS (SELECT 1 FROM trial) AS trial_won, w.calls, w.retries
      FROM decision d CROSS JOIN w`;
}

function verdictOf(settings: DownstreamSettings, row: AdmissionRow | undefined): Admission {
  const { breaker } = settings;
  if (!row) throw new Error('admitCall: no row');
  const window = { calls: row.calls, retries: row.retries };
  switch (row.verdict) {
    case 'closed':
      return { admitted: true, trial: false };
    case 'trial':
      if (row.trial_won) return { admitted: true, trial: true };
      // Another worker took the last trial place meanwhile.
      return { admitted: false, refusal: 'trials_busy', waitMs: trialWait(settings), window };
    case 'open':
      return { admitted: false, refusal: 'open', waitMs: Math.max(1, row.wait_ms ?? breaker.openMs), window };
    case 'forced_open':
      return { admitted: false, refusal: 'forced_open', waitMs: breaker.openMs, window };
    case 'trials_busy':
      return { admitted: false, refusal: 'trials_busy', waitMs: trialWait(settings), window };
    default:
      // A retry over budget waits for calls to leave the window.
      return { admitted: false, refusal: 'retry_budget', waitMs: budgetWait(settings), window };
  }
}

/** How long a call refused while trials are out waits: a quarter of the open time, at least 1 s. */
const trialWait = (s: DownstreamSettings) => Math.max(1_000, Math.round(s.breaker.openMs / 4));
/** How long a retry over budget waits: a tenth of the budget's window, at least 1 s. */
const budgetWait = (s: DownstreamSettings) => Math.max(1_000, Math.round(s.retryBudget.windowMs / 10));
