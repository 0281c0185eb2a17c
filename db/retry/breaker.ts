/**
 * The circuit breaker and retry budget of a downstream (R8), shared by every worker through
 * PostgreSQL: one statement lets a partner call through or refuses it, one records a failure
 * (and opens the breaker when the window says so), one records a trial's outcome. A call that
 * succeeds while the breaker is closed writes nothing more than its admission. Every statement
 * uses the database's clock, so workers with skewed clocks agree on the window.
 */
import type { PrismaClient } from '../../prisma/generated/client.ts';
import type { DownstreamSettings } from '../ledger/downstreams.ts';

type Db = Pick<PrismaClient, '$queryRaw'>;

/** Why a call was refused. */
export type Refusal = 'open' | 'forced_open' | 'trials_busy' | 'retry_budget';

/** What {@link admitCall} decided. */
export type Admission =
  { admitted: true; trial: boolean } | { admitted: false; refusal: Refusal; waitMs: number };

/** The states of a breaker. */
export type BreakerStateName = 'closed' | 'open' | 'half_open';

/** The actor of the transitions the breaker makes on its own. */
export const BREAKER_ACTOR = 'system:breaker';

const secs = (ms: number) => ms / 1000;
/**
 * Lets one call to `settings.id` through or refuses it, and counts it when let through (a retry
 * also counts as a retry). Closed: every first attempt goes; a retry goes while the window's
 * retries stay within the budget (`max(minRetries, ratio × calls)`). Open: nothing goes until
 * `half_open_at`; then up to `trialCalls` trials go (half-open); a trial that never reports back
 * frees its place after the open time. Forced open (an operator): nothing goes. `waitMs` of a
 * refusal is when to ask again. One statement: the migration's `df_admit_call`, whose plans are
 * kept per session (every partner call runs it). Retries are admitted one at a time per
 * downstream (an advisory lock in the function): retries refused together come back together.
 */
export async function admitCall(db: Db, settings: DownstreamSettings, retry: boolean): Promise<Admission> {
  const { id, breaker, retryBudget } = settings;
  // The same call as db/retry/admission-sql.ts `admitCallSql` (kept apart: this module loads no
  // Prisma runtime, for the CLI's start-up).
  const rows = await db.$queryRaw<AdmissionRow[]>`
    SELECT verdict, wait_ms FROM df_admit_call(${id}, ${retry}, ${breaker.trialCalls}::int,
      ${breaker.openMs}::int, ${retryBudget.ratio}::float8, ${retryBudget.minRetries}::int,
      ${retryBudget.windowMs}::int)`;
  const row = rows[0];
  if (!row) throw new Error('df_admit_call returned no row');
  return admissionOf(row, settings);
}

/** The row `df_admit_call` returns. */
export interface AdmissionRow {
  verdict: string;
  wait_ms: number | null;
}

/** What a row of `df_admit_call` decided. */
export function admissionOf(row: AdmissionRow, settings: DownstreamSettings): Admission {
  const { breaker } = settings;
  switch (row.verdict) {
    case 'closed':
      return { admitted: true, trial: false };
    case 'trial':
      return { admitted: true, trial: true };
    case 'open':
      return { admitted: false, refusal: 'open', waitMs: Math.max(1, row.wait_ms ?? breaker.openMs) };
    case 'forced_open':
      return { admitted: false, refusal: 'forced_open', waitMs: breaker.openMs };
    case 'trials_busy':
      return { admitted: false, refusal: 'trials_busy', waitMs: trialWait(settings) };
    default:
      // A retry over budget waits for calls to leave the window.
      return { admitted: false, refusal: 'retry_budget', waitMs: budgetWait(settings) };
  }
}

/** How long a call refused while trials are out waits: a quarter of the open time, at least 1 s. */
export const trialWait = (s: DownstreamSettings): number => Math.max(1_000, Math.round(s.breaker.openMs / 4));
/** How long a retry over budget waits: a tenth of the budget's window, at least 1 s. */
const budgetWait = (s: DownstreamSettings) => Math.max(1_000, Math.round(s.retryBudget.windowMs / 10));

/** How a breaker stands when read: its state, and how long a call asked now would wait. */
export interface BreakerHold {
  state: BreakerStateName;
  forced: boolean;
  /** 0 when closed; else the wait {@link admitCall} would name (open: until half-open). */
  waitMs: number;
}

/**
 * Reads how the breaker of `settings.id` stands now (the database's clock): one read by primary
 * key, no write. A downstream without a breaker row is closed. Read after a failed call, to tell
 * a failure the breaker now holds back (activities/retry/breaker-guard.ts) from an ordinary one.
 */
export async function readHold(db: Db, settings: DownstreamSettings): Promise<BreakerHold> {
  const rows = await db.$queryRaw<{ state: BreakerStateName; forced: boolean; open_ms: number | null }[]>`
    SELECT state, forced,
           ceil(GREATEST(0, EXTRACT(EPOCH FROM (half_open_at - now()))) * 1000)::int AS open_ms
      FROM breaker WHERE downstream = ${settings.id}`;
  const row = rows[0];
  if (!row || row.state === 'closed') return { state: 'closed', forced: false, waitMs: 0 };
  const waitMs = row.forced
    ? settings.breaker.openMs
    : row.state === 'half_open'
      ? trialWait(settings)
      : Math.max(1, row.open_ms ?? settings.breaker.openMs);
  return { state: row.state, forced: row.forced, waitMs };
}

/** A change of a breaker's state. */
export interface Transition {
  from: 'closed' | 'open' | 'half_open';
  to: 'closed' | 'open' | 'half_open';
  reason: string;
}

/**
 * Records a failed call that says the partner is unwell (timeout, network error, 5xx, 429) and
 * opens the breaker when, since it last closed, the window holds at least `minCalls` calls of
 * which at least `failureRate` failed. Returns the transition it made, if any.
 */
export async function recordFailure(db: Db, settings: DownstreamSettings): Promise<Transition | undefined> {
  const { id, breaker } = settings;
  const rows = await db.$queryRaw<{ calls: number; failures: number }[]>`
    WITH f AS (
      INSERT INTO downstream_calls (downstream, second, failures)
      VALUES (${id}, date_trunc('second', now()), 1)
      ON CONFLICT (downstream, second) DO UPDATE SET failures = downstream_calls.failures + 1
      RETURNING 1
    ), w AS (
      SELECT COALESCE(sum(calls), 0)::int AS calls, COALESCE(sum(failures), 0)::int + 1 AS failures
        FROM downstream_calls
       WHERE downstream = ${id}
         AND second > now() - make_interval(secs => ${secs(breaker.windowMs)}::float8)
         AND second > date_trunc('second', COALESCE(
               (SELECT count_from FROM breaker WHERE downstream = ${id}), '-infinity'::timestamptz))
    ), opened AS (
      INSERT INTO breaker AS b (downstream, state, half_open_at, reason, changed_by, changed_at, count_from)
      SELECT ${id}, 'open', now() + make_interval(secs => ${secs(breaker.openMs)}::float8),
             format('%s of %s calls failed', w.failures, w.calls), ${BREAKER_ACTOR}, now(),
             '-infinity'::timestamptz
        FROM w
       WHERE w.calls >= ${breaker.minCalls}::int AND w.failures >= ${breaker.failureRate}::float8 * w.calls
      ON CONFLICT (downstream) DO UPDATE
        SET state = 'open', half_open_at = excluded.half_open_at, half_open_since = NULL,
            trials_started = 0, reason = excluded.reason, changed_by = excluded.changed_by,
            changed_at = excluded.changed_at
        WHERE b.state = 'closed' AND NOT b.forced
      RETURNING 1
    )
    SELECT w.calls, w.failures FROM w WHERE EXISTS (SELECT 1 FROM opened)`;
  const row = rows[0];
  return row
    ? { from: 'closed', to: 'open', reason: `${row.failures} of ${row.calls} calls failed` }
    : undefined;
}

/**
 * Records a trial call's outcome: success closes the breaker (calls before now no longer count),
 * failure opens it again for the open time. Only the first outcome of a half-open breaker acts.
 */
export async function recordTrial(
  db: Db,
  settings: DownstreamSettings,
  ok: boolean,
): Promise<Transition | undefined> {
  const { id, breaker } = settings;
  const reason = ok ? 'a trial call succeeded' : 'a trial call failed';
  const rows = ok
    ? await db.$queryRaw<{ n: number }[]>`
        UPDATE breaker
           SET state = 'closed', count_from = now(), half_open_at = NULL, half_open_since = NULL,
               trials_started = 0, reason = ${reason}, changed_by = ${BREAKER_ACTOR}, changed_at = now()
         WHERE downstream = ${id} AND state = 'half_open' AND NOT forced
        RETURNING 1 AS n`
    : await db.$queryRaw<{ n: number }[]>`
        UPDATE breaker
           SET state = 'open', half_open_at = now() + make_interval(secs => ${secs(breaker.openMs)}::float8),
               half_open_since = NULL, trials_started = 0, reason = ${reason},
               changed_by = ${BREAKER_ACTOR}, changed_at = now()
         WHERE downstream = ${id} AND state = 'half_open' AND NOT forced
        RETURNING 1 AS n`;
  if (rows.length === 0) return undefined;
  return { from: 'half_open', to: ok ? 'closed' : 'open', reason };
}

/**
 * Gives back a trial place taken by a call that was then not made (its caller found it had
 * nothing to send): without it the place stays taken until the open time passes again.
 */
export async function releaseTrial(db: Db, downstream: string): Promise<void> {
  await db.$queryRaw`
    UPDATE breaker SET trials_started = GREATEST(0, trials_started - 1)
     WHERE downstream = ${downstream} AND state = 'half_open' AND trials_started > 0
    RETURNING 1 AS n`;
}

/**
 * An operator's override: `open` forces the breaker open until someone closes it; `close` closes
 * it and forgets the calls before now. Returns the state before. Through `db` (a transaction
 * client, shared with the audit entry).
 */
export async function setBreaker(
  db: Db,
  downstream: string,
  to: 'open' | 'closed',
  by: { actor: string; reason: string },
): Promise<{ state: BreakerStateName; forced: boolean }> {
  const rows = await db.$queryRaw<{ state: BreakerStateName; forced: boolean }[]>`
    WITH before AS (SELECT state, forced FROM breaker WHERE downstream = ${downstream})
    INSERT INTO breaker AS b (downstream, state, forced, reason, changed_by, changed_at, count_from)
    VALUES (${downstream}, ${to}::breaker_state, ${to === 'open'}, ${by.reason}, ${by.actor}, now(), now())
    ON CONFLICT (downstream) DO UPDATE
      SET state = excluded.state, forced = excluded.forced, half_open_at = NULL, half_open_since = NULL,
          trials_started = 0, reason = excluded.reason, changed_by = excluded.changed_by,
          changed_at = excluded.changed_at,
          count_from = CASE WHEN excluded.state = 'closed' THEN now() ELSE b.count_from END
    RETURNING (SELECT state FROM before) AS state, (SELECT forced FROM before) AS forced`;
  const before = rows[0];
  return { state: before?.state ?? 'closed', forced: before?.forced ?? false };
}

/**
 * Deletes the per-second call counts older than `olderThanMs` before `cutoff` (null: the
 * database's clock); returns how many. The cleanup pass passes more than the longest window.
 */
export function pruneCallCounts(
  db: Pick<PrismaClient, '$executeRaw'>,
  cutoff: Date | null,
  olderThanMs: number,
): Promise<number> {
  return db.$executeRaw`
    DELETE FROM downstream_calls
     WHERE second < COALESCE(${cutoff}::timestamptz, now()) - make_interval(secs => ${secs(olderThanMs)}::float8)`;
}
