/**
 * Which ledger row a claim of a run acts on (R4): its own (by round), an earlier claim's still
 * open, a new intent row written before any call, or an earlier claim's confirmed effect adopted.
 * The writes are fenced by the run's lease.
 */
import type { DownstreamAction, PrismaClient } from '../../prisma/generated/client.ts';
import { type Fence, heldBy } from '../fence.ts';
import { COMPLETED_UNRECORDED } from '../../contract/error-types.ts';
import { NOT_FINAL_STATES } from '../../contract/states.ts';
import type { ActionState } from './ledger.ts';

/** Which action of which run: a claim's rows are its run's `action` rows of its round. */
export interface ActionOfRun {
  fetchRunId: string;
  action: string;
}

/**
 * The claim's own (non-stray) row of `action` in `round`; else the latest row of `action` an
 * earlier claim (a round before `round`) left in {@link NOT_FINAL_STATES}; else null. One read:
 * the claim's own row, when there is one, comes first, its round being the highest matched.
 * Read-only.
 */
export async function findOwnOrEarlierOpenAction(
  db: Pick<PrismaClient, 'downstreamAction'>,
  of: ActionOfRun,
  round: number,
): Promise<DownstreamAction | null> {
  return db.downstreamAction.findFirst({
    where: {
      fetchRunId: of.fetchRunId,
      action: of.action,
      strayOf: null,
      OR: [{ round }, { round: { lt: round }, state: { in: [...NOT_FINAL_STATES] } }],
    },
    orderBy: { round: 'desc' },
  });
}

/** The row of ledger key `key`, or null. Read-only. */
export async function findActionByKey(
  db: Pick<PrismaClient, 'downstreamAction'>,
  key: string,
): Promise<DownstreamAction | null> {
  return db.downstreamAction.findUnique({ where: { key } });
}

/**
 * Inserts the intent row (state `attempting`, no call made) of `intent.key`, whose reference is
 * the key too — only while `fence` holds the run — and returns it. Idempotent: an existing key
 * writes nothing and returns undefined, as does a fence that does not hold (the caller reads the
 * row back by key to tell the two apart).
 */
export async function insertIntent(
  db: Pick<PrismaClient, '$queryRaw'>,
  fence: Fence,
  intent: { businessKey: string; key: string; round: number; action: string; step: number },
): Promise<ActionState | undefined> {
  const [row] = await db.$queryRaw<ActionState[]>`
    INSERT INTO downstream_action (id, fetch_run_id, business_key, key, round, action, step, reference)
    SELECT gen_random_uuid(), r.id, ${intent.businessKey}, ${intent.key}, ${intent.round}, ${intent.action}, ${intent.step}, ${intent.key}
      FROM fetch_run r
     WHERE ${heldBy(fence, 'r')}
    ON CONFLICT (key) DO NOTHING
    RETURNING id::text AS id, state::text AS state, attempts, partner_id AS "partnerId"`;
  return row;
}

/**
 * Writes back, as `unknown`, the rows of `intent.action` that earlier rounds of a run whose
 * database lost what its workflow did (a dead letter with {@link COMPLETED_UNRECORDED}: PostgreSQL
 * restored to an older point than Temporal) may have had: one per earlier round without a row,
 * its reference the round's own, its settle window closed. Each is then looked up at the partner
 * like any call with an unknown outcome and adopted when it took effect, so a run taken up again
 * after such a restore never makes the effect twice. Any other run writes nothing: a round
 * without a row never called (its intent is written before any call). Fenced by the run's lease.
 * Idempotent. Returns the rows written.
 */
export async function restoreForgottenRounds(
  db: Pick<PrismaClient, '$executeRaw'>,
  fence: Fence,
  intent: { businessKey: string; round: number; action: string; step: number },
): Promise<number> {
  if (intent.round <= 1) return 0;
  const prefix = `${intent.businessKey}:${intent.action}:r`;
  return db.$executeRaw`
    INSERT INTO downstream_action (id, fetch_run_id, business_key, key, round, action, step, reference,
                                   state, attempts, last_call_at, settles_at, last_error_type, last_error)
    SELECT gen_random_uuid(), r.id, ${intent.businessKey}, ${prefix} || g.round, g.round, ${intent.action},
           ${intent.step}, ${prefix} || g.round, 'unknown', 1, now(), now(), 'OutcomeUnknown',
           'the database was restored to a point before this round''s record: looked up at the partner'
      FROM fetch_run r, generate_series(1, ${intent.round - 1}) AS g(round)
     WHERE ${heldBy(fence, 'r')}
       AND EXISTS (SELECT 1 FROM dead_letter d WHERE d.fetch_run_id = r.id AND d.error_code = ${COMPLETED_UNRECORDED})
       AND NOT EXISTS (SELECT 1 FROM downstream_action a
                        WHERE a.fetch_run_id = r.id AND a.action = ${intent.action} AND a.round = g.round)
    ON CONFLICT (key) DO NOTHING`;
}

/**
 * Moves an earlier claim's `confirmed` (non-stray) action of the fenced run to `round`, so that
 * this claim confirms it and, should the run fail, compensates it — only while `fence` holds the
 * run. Returns whether it moved. Excludes compensation's start on the row (ledger-compensate.ts).
 */
export async function adoptAction(
  db: Pick<PrismaClient, '$executeRaw'>,
  fence: Fence,
  actionId: string,
  round: number,
): Promise<boolean> {
  const adopted = await db.$executeRaw`
    UPDATE downstream_action a SET round = ${round}, updated_at = now()
      FROM fetch_run r
     WHERE a.id = ${actionId}::uuid AND a.state = 'confirmed' AND a.stray_of IS NULL
       AND a.round < ${round}
       AND r.id = a.fetch_run_id AND ${heldBy(fence, 'r')}`;
  return adopted === 1;
}
