/**
 * Orphaned downstream actions (R4, R11): ledger rows that still hold, or may hold, an effect at a
 * partner that nobody is settling. A workflow terminated mid-way (the Web UI's Terminate, `temporal
 * workflow terminate`) runs no code at all: its run's row still says `running` and its ledger rows
 * `attempting` or `confirmed`, with no dead letter and no compensation. The stuck-run sweep settles
 * such runs; this count is what shows, in `status`, the metrics and an alert, that something is
 * left hidden meanwhile — or for good, when no sweep runs.
 *
 * The definition, written once here:
 * - the row needs settling: `attempting`, `unknown` or `compensating`, or `confirmed` while its run
 *   has not succeeded (a succeeded run keeps its effect) or it is a stray (voided whatever the
 *   run's outcome); `needs_manual` waits for a human and has its own count;
 * - and its run has no live owner: no lease held now (a live workflow renews it at every step; a
 *   finished run holds none), and, when the run has ended, nothing has happened to the action for
 *   {@link ORPHAN_QUIET_SECONDS} (nor is its settle window still open): a live compensation touches
 *   the row at every step and waits out a settle window before looking the effect up.
 */
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { COMPENSABLE_STATES } from '../../contract/states.ts';

/**
 * How long an ended run's unsettled action may stay untouched before it counts as orphaned: above
 * the longest quiet stretch of a live compensation (an attempt's 30 s timeout plus its retry
 * backoff), so that a compensation at work is not reported.
 */
export const ORPHAN_QUIET_SECONDS = 120;

/** One run with orphaned actions. */
export interface OrphanedRun {
  fetchRunId: string;
  workflowId: string | null;
  sourceId: string;
  businessDate: string;
  /** The run's status as its row says it (`running` for a terminated run not yet swept). */
  status: string;
  /** Its orphaned actions, and their states (sorted). */
  actions: number;
  states: string[];
}

export interface OrphanedActions {
  /** Orphaned actions in all (every run, not only those listed). */
  count: number;
  /** Runs with orphaned actions, the longest-untouched first, at most the limit asked for. */
  runs: OrphanedRun[];
}

interface Row {
  fetch_run_id: string;
  workflow_id: string | null;
  source_id: string;
  business_date: string;
  status: string;
  actions: number;
  states: string[];
  total: number;
}

/**
 * The orphaned actions now (see the module comment), with up to `limit` of their runs (at least
 * 1). One statement. Read-only.
 */
export async function readOrphanedActions(
  db: Pick<PrismaClient, '$queryRaw'>,
  options: { limit?: number; quietSeconds?: number } = {},
): Promise<OrphanedActions> {
  const limit = Math.max(1, options.limit ?? 20);
  const quiet = options.quietSeconds ?? ORPHAN_QUIET_SECONDS;
  const unsettled = COMPENSABLE_STATES.filter((s) => s !== 'confirmed').join(',');
  const rows = await db.$queryRaw<Row[]>`
    SELECT r.id::text AS fetch_run_id, r.workflow_id, r.source_id,
           to_char(r.business_date, 'YYYY-MM-DD') AS business_date, r.status::text AS status,
           count(*)::int AS actions, array_agg(DISTINCT a.state::text ORDER BY a.state::text) AS states,
           (sum(count(*)) OVER ())::int AS total
      FROM downstream_action a JOIN fetch_run r ON r.id = a.fetch_run_id
     WHERE (a.state::text = ANY (string_to_array(${unsettled}, ','))
            OR (a.state = 'confirmed' AND (r.status <> 'succeeded' OR a.stray_of IS NOT NULL)))
       AND (r.lease_until IS NULL OR r.lease_until < now())
       AND (r.finished_at IS NULL
            OR GREATEST(r.finished_at, a.updated_at, COALESCE(a.settles_at, a.updated_at))
                 < now() - make_interval(secs => ${quiet}))
     GROUP BY r.id
     ORDER BY min(a.updated_at), r.id
     LIMIT ${limit}`;
  return {
    count: rows[0]?.total ?? 0,
    runs: rows.map((r) => ({
      fetchRunId: r.fetch_run_id,
      workflowId: r.workflow_id,
      sourceId: r.source_id,
      businessDate: r.business_date,
      status: r.status,
      actions: r.actions,
      states: r.states,
    })),
  };
}
