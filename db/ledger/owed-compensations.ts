/**
 * Compensations owed and not running (R4, R11), by claim: strays — effects at a partner that the
 * ledger did not expect — whatever their run's outcome, and the actions of a failed or cancelled
 * run whose compensation never started. The workers' sweep (worker/sweeps/owed-compensations.ts)
 * starts each claim's compensation workflow.
 */
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { COMPENSABLE_STATES } from '../../contract/states.ts';

/**
 * A run that ended this recently is left to its workflow, which starts its compensation itself as
 * it ends (strays have no such owner).
 */
export const OWED_QUIET_SECONDS = 15;

/** One claim (a run's round) that owes a compensation. */
export interface OwedClaim {
  fetch_run_id: string;
  round: number;
  job_type: string;
  source_id: string;
  /** `YYYY-MM-DD`. */
  business_date: string;
  /** The run's status. */
  status: string;
  /** Strays among the actions owed. */
  strays: number;
  /** Actions in {@link COMPENSABLE_STATES}. */
  actions: number;
}

/**
 * The claims that owe a compensation (see the module comment), the longest untouched first, at
 * most `max`. One statement. Read-only.
 */
export async function readOwedClaims(
  db: Pick<PrismaClient, '$queryRaw'>,
  max: number,
  quietSeconds = OWED_QUIET_SECONDS,
): Promise<OwedClaim[]> {
  const compensable = COMPENSABLE_STATES.join(',');
  return db.$queryRaw<OwedClaim[]>`
    SELECT a.fetch_run_id::text, a.round, r.job_type, r.source_id, to_char(r.business_date, 'YYYY-MM-DD') AS business_date,
           r.status::text AS status, count(*) FILTER (WHERE a.stray_of IS NOT NULL)::int AS strays,
           count(*)::int AS actions
      FROM downstream_action a JOIN fetch_run r ON r.id = a.fetch_run_id
     WHERE a.state::text = ANY (string_to_array(${compensable}, ','))
       AND (a.stray_of IS NOT NULL
            OR (r.status IN ('dead_lettered', 'cancelled')
                AND r.finished_at < now() - make_interval(secs => ${quietSeconds})))
     GROUP BY a.fetch_run_id, a.round, r.job_type, r.source_id, r.business_date, r.status
     ORDER BY min(a.updated_at)
     LIMIT ${max}`;
}
