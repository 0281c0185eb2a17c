/**
 * The candidates of a stuck run (R1, R9): `fetch_run` rows that say they are live (`running`, or
 * `retry_wait`) while their lease has run out. A live workflow keeps renewing its lease, so only
 * rows whose owner went quiet are candidates; whether one is stuck (its workflow closed or gone)
 * is Temporal's to say: client/stuck-runs.ts.
 */
import type { PrismaClient } from '../prisma/generated/client.ts';
import { isLive } from './fence.ts';

/** A live run whose lease has run out, with what looking it up and settling it need. */
export interface StuckCandidate {
  id: string;
  workflow_id: string;
  lease_token: string;
  attempt: number;
  job_type: string;
  source_id: string;
  /** `YYYY-MM-DD`. */
  business_date: string;
  lease_until: Date;
}

/** Where a walk over the candidates stands: after this lease end, then this id. */
export interface CandidateCursor {
  leaseUntil: Date;
  id: string;
}

/** The cursor before every candidate. */
export const FIRST_CANDIDATE: CandidateCursor = {
  leaseUntil: new Date(0),
  id: '00000000-0000-0000-0000-000000000000',
};

/**
 * The next `limit` candidates after `after`, oldest lease first (then by id), so a walk pages
 * through them without seeing one twice. Read-only.
 */
export async function readStuckCandidates(
  db: Pick<PrismaClient, '$queryRaw'>,
  after: CandidateCursor,
  limit: number,
): Promise<StuckCandidate[]> {
  return db.$queryRaw<StuckCandidate[]>`
    SELECT id::text AS id, workflow_id, lease_token::text AS lease_token, attempt, job_type, source_id,
           to_char(business_date, 'YYYY-MM-DD') AS business_date, lease_until
      FROM fetch_run
     WHERE ${isLive()} AND lease_until < now() AND lease_token IS NOT NULL
       AND (lease_until, id) > (${after.leaseUntil}::timestamptz, ${after.id}::uuid)
     ORDER BY lease_until, id
     LIMIT ${limit}`;
}
