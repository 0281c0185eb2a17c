/**
 * Which ledger row a claim of a run acts on (R4): its own (by round), an earlier claim's still
 * open, a new intent row written before any call, or an earlier claim's confirmed effect adopted.
 * The writes are fenced by the run's lease.
 */
import type { DownstreamAction, PrismaClient } from '../prisma/generated/client.ts';
import { type Fence, heldBy } from './fence.ts';
import { type ActionState, NOT_FINAL_STATES } from './ledger.ts';

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
