/**
 * What operators and the metrics see of R8's shared circuit breakers (db/retry/breaker.ts): which
 * downstreams there are, each one's breaker and retry-budget use, and the lock an operator's
 * override takes on a breaker row. Every read uses the database's clock, like the admissions.
 */
import { Prisma, type PrismaClient } from '../../prisma/generated/client.ts';
import {
  breakerScope,
  DEFAULT_DOWNSTREAM,
  defaultSettings,
  defaultSourceOf,
  type DownstreamSettings,
  listDownstreams,
} from '../ledger/downstreams.ts';

type Db = Pick<PrismaClient, '$queryRaw'>;

const secs = (ms: number) => ms / 1000;

/**
 * A breaker row's state as of now, `b` its alias: open past its half-open time reads half-open
 * (the next call is let through as a trial; until one comes, the row itself still says open).
 */
export const BREAKER_STATE_NOW = Prisma.sql`CASE WHEN b.state = 'open' AND NOT b.forced AND b.half_open_at <= now()
  THEN 'half_open' ELSE b.state::text END`;

/** A breaker as operators see it. */
export interface BreakerView {
  downstream: string;
  state: 'closed' | 'open' | 'half_open';
  forced: boolean;
  halfOpenAt: Date | null;
  reason: string | null;
  changedBy: string | null;
  changedAt: Date | null;
  /** Over the breaker's window: calls, failures (since it last closed), retries over the budget's. */
  window: { calls: number; failures: number; retries: number };
  /** Calls (first attempts and retries) over the budget's window. */
  budgetCalls: number;
}

/**
 * The breakers of `downstreams` (closed with an empty window when it has no row); one open past
 * its half-open time reads half-open, as the next call will find it.
 */
export async function readBreakers(
  db: Db,
  downstreams: readonly DownstreamSettings[],
): Promise<BreakerView[]> {
  const views: BreakerView[] = [];
  for (const s of downstreams) {
    const rows = await db.$queryRaw<
      {
        state: BreakerView['state'] | null;
        forced: boolean | null;
        half_open_at: Date | null;
        reason: string | null;
        changed_by: string | null;
        changed_at: Date | null;
        calls: number;
        failures: number;
        retries: number;
        budget_calls: number;
      }[]
    >`
      SELECT ${BREAKER_STATE_NOW} AS state, b.forced, b.half_open_at, b.reason, b.changed_by, b.changed_at,
             (SELECT COALESCE(sum(calls), 0)::int FROM downstream_calls c
               WHERE c.downstream = ${s.id} AND c.second > now() - make_interval(secs => ${secs(s.breaker.windowMs)}::float8)
                 AND c.second > date_trunc('second', COALESCE(b.count_from, '-infinity'::timestamptz))) AS calls,
             (SELECT COALESCE(sum(failures), 0)::int FROM downstream_calls c
               WHERE c.downstream = ${s.id} AND c.second > now() - make_interval(secs => ${secs(s.breaker.windowMs)}::float8)
                 AND c.second > date_trunc('second', COALESCE(b.count_from, '-infinity'::timestamptz))) AS failures,
             (SELECT COALESCE(sum(retries), 0)::int FROM downstream_calls c
               WHERE c.downstream = ${s.id} AND c.second > now() - make_interval(secs => ${secs(s.retryBudget.windowMs)}::float8)) AS retries,
             (SELECT COALESCE(sum(calls), 0)::int FROM downstream_calls c
               WHERE c.downstream = ${s.id} AND c.second > now() - make_interval(secs => ${secs(s.retryBudget.windowMs)}::float8)) AS budget_calls
        FROM (SELECT 1) AS one LEFT JOIN breaker b ON b.downstream = ${s.id}`;
    const r = rows[0];
    views.push({
      downstream: s.id,
      state: r?.state ?? 'closed',
      forced: r?.forced ?? false,
      halfOpenAt: r?.half_open_at ?? null,
      reason: r?.reason ?? null,
      changedBy: r?.changed_by ?? null,
      changedAt: r?.changed_at ?? null,
      window: { calls: r?.calls ?? 0, failures: r?.failures ?? 0, retries: r?.retries ?? 0 },
      budgetCalls: r?.budget_calls ?? 0,
    });
  }
  return views;
}

/**
 * The names of {@link knownDownstreams}, as a query of one column `id`. A source that names no
 * downstream has a breaker of its own, `default.<source id>` (breakerScope).
 */
const KNOWN_IDS = Prisma.sql`
  SELECT id FROM downstream
  UNION SELECT CASE WHEN downstream = ${DEFAULT_DOWNSTREAM} THEN ${DEFAULT_DOWNSTREAM} || '.' || id ELSE downstream END
          FROM source WHERE removed_at IS NULL
  UNION SELECT downstream FROM breaker`;

/**
 * Every downstream breaker an operator may need to see: a downstream with settings (a
 * `downstream` row), one a source not removed names (`source.downstream`; `default.<source>` for
 * a source that names none), or one with a breaker row (it was called, or overridden). Sorted by
 * name. Read-only.
 */
export async function knownDownstreams(db: Db): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`${KNOWN_IDS} ORDER BY 1`;
  return rows.map((r) => r.id);
}

/** One breaker state as the state gauge reports it. */
export interface BreakerState {
  downstream: string;
  state: BreakerView['state'];
  forced: boolean;
}

/**
 * The state of every known downstream's breaker ({@link knownDownstreams}; closed when it has no
 * row), in one statement: what each worker's sampler reads for `durable_fetch_breaker_state`.
 */
export async function readBreakerStates(db: Db): Promise<BreakerState[]> {
  return db.$queryRaw<BreakerState[]>`
    WITH ids AS (${KNOWN_IDS})
    SELECT ids.id AS downstream, COALESCE(${BREAKER_STATE_NOW}, 'closed') AS state, COALESCE(b.forced, false) AS forced
      FROM ids LEFT JOIN breaker b ON b.downstream = ids.id
     ORDER BY 1`;
}

/** A downstream's retry budget as it stands: the retries its window holds against what it allows. */
export interface BudgetUse {
  windowMs: number;
  /** Calls (first attempts and retries) and retries let through over the budget's window. */
  calls: number;
  retries: number;
  /**
   * How many retries the window admits: `max(minRetries, ratio × (calls + 1))`, rounded down (the
   * next retry is a call too, as the admission counts it), so the budget is spent once
   * `retries >= allowed`.
   */
  allowed: number;
  exhausted: boolean;
}

/** A downstream with its settings, its breaker and its budget use. */
export interface DownstreamBreaker extends Omit<BreakerView, 'budgetCalls'> {
  /** True when a `downstream` row holds the settings; false: the defaults. */
  configured: boolean;
  settings: DownstreamSettings;
  budget: BudgetUse;
}

/** The retries a budget allows with `calls` in its window (admitCall's rule, see {@link BudgetUse}). */
export function retryAllowance(budget: DownstreamSettings['retryBudget'], calls: number): number {
  return Math.max(budget.minRetries, Math.floor(budget.ratio * (calls + 1)));
}

/**
 * The breakers of `ids` (default: every known downstream), with their settings (the row's, or
 * the defaults) and their budget use. Read-only; one statement per downstream.
 */
export async function readDownstreamBreakers(
  db: Db & Pick<PrismaClient, 'downstream'>,
  ids?: readonly string[],
): Promise<DownstreamBreaker[]> {
  const names = ids ?? (await knownDownstreams(db));
  const rows = new Map((await listDownstreams(db)).map((s) => [s.id, s]));
  const settings = names.map((id) => {
    const own = defaultSourceOf(id);
    if (own === undefined) return rows.get(id) ?? defaultSettings(id);
    return breakerScope(rows.get(DEFAULT_DOWNSTREAM) ?? defaultSettings(DEFAULT_DOWNSTREAM), own);
  });
  const views = await readBreakers(db, settings);
  const out: DownstreamBreaker[] = [];
  for (const [i, { budgetCalls: calls, ...view }] of views.entries()) {
    const s = settings[i]!;
    const retries = view.window.retries;
    const allowed = retryAllowance(s.retryBudget, calls);
    out.push({
      ...view,
      configured: rows.has(defaultSourceOf(s.id) === undefined ? s.id : DEFAULT_DOWNSTREAM),
      settings: s,
      budget: { windowMs: s.retryBudget.windowMs, calls, retries, allowed, exhausted: retries >= allowed },
    });
  }
  return out;
}

/** A breaker row as an override found it (or `exists: false`: none yet, which reads closed). */
export interface LockedBreaker {
  exists: boolean;
  state: BreakerView['state'];
  forced: boolean;
  reason: string | null;
  changedBy: string | null;
  changedAt: Date | null;
}

/**
 * Locks the breaker row of `downstream` for the rest of the transaction `tx` and returns it, so
 * an override decides on the state it changes and audits it exactly: two operators acting at once
 * are serialised. A downstream without a row gets a closed one first (rolled back with `tx` when
 * the override is refused); its window then counts from now, as any override's does.
 */
export async function lockBreaker(tx: Db, downstream: string): Promise<LockedBreaker> {
  const created = await tx.$queryRaw<{ n: number }[]>`
    INSERT INTO breaker (downstream, count_from) VALUES (${downstream}, now())
    ON CONFLICT (downstream) DO NOTHING
    RETURNING 1 AS n`;
  const [row] = await tx.$queryRaw<
    {
      state: BreakerView['state'];
      forced: boolean;
      reason: string | null;
      changed_by: string | null;
      changed_at: Date;
    }[]
  >`
    SELECT state::text AS state, forced, reason, changed_by, changed_at
      FROM breaker WHERE downstream = ${downstream} FOR UPDATE`;
  if (!row) throw new Error(`lockBreaker: no breaker row for ${downstream}`);
  if (created.length > 0) {
    return { exists: false, state: 'closed', forced: false, reason: null, changedBy: null, changedAt: null };
  }
  return {
    exists: true,
    state: row.state,
    forced: row.forced,
    reason: row.reason,
    changedBy: row.changed_by,
    changedAt: row.changed_at,
  };
}
