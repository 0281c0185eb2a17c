/**
 * The ledger's statements of compensation (R4, R11): which actions a claim must still undo, the
 * void attempt counted before the call, the undone effect recorded, a row handed to a human.
 */
import type { DownstreamAction, PrismaClient } from '../../prisma/generated/client.ts';
import { COMPENSABLE_STATES } from '../../contract/states.ts';

/**
 * The actions of claim `round` of the run in {@link COMPENSABLE_STATES} that compensation must
 * settle, latest step first: all of them when the run ended without succeeding, and its strays
 * whatever the run's outcome. Read-only.
 */
export async function pendingCompensations(
  db: Pick<PrismaClient, 'downstreamAction'>,
  fetchRunId: string,
  round: number,
): Promise<DownstreamAction[]> {
  return db.downstreamAction.findMany({
    where: {
      fetchRunId,
      round,
      state: { in: [...COMPENSABLE_STATES] },
      OR: [{ run: { status: { in: ['dead_lettered', 'cancelled'] } } }, { strayOf: { not: null } }],
    },
    orderBy: [{ step: 'desc' }, { createdAt: 'desc' }],
  });
}

/**
 * Counts one more void attempt of the action and marks it `compensating` — only while the effect
 * is this compensation's to undo: a stray, or an action of a run that ended without succeeding
 * still owned by claim `round` (null: any). Returns whether it applied.
 */
export async function startCompensation(
  db: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  round: number | null,
): Promise<boolean> {
  // Be very careful: this conditional UPDATE and the adoption of the action by a later claim
  // (which moves its round while it is `confirmed`: ledger-intent.ts) exclude each other on the
  // row; whichever comes first wins, so an adopted effect is never voided and a voided one never
  // adopted.
  const started = await db.$executeRaw`
    UPDATE downstream_action a
       SET state = 'compensating', compensation_attempts = a.compensation_attempts + 1, updated_at = now()
      FROM fetch_run r
     WHERE a.id = ${actionId}::uuid AND a.state IN ('confirmed', 'compensating') AND r.id = a.fetch_run_id
       AND (a.stray_of IS NOT NULL
            OR (r.status IN ('dead_lettered', 'cancelled')
                AND a.round = COALESCE(${round}::int, a.round)))`;
  return started === 1;
}

/** The effect is undone at the partner: `compensated`, only from `compensating`. */
export async function recordCompensated(
  db: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  partnerState: string,
): Promise<void> {
  await db.$executeRaw`
    UPDATE downstream_action SET state = 'compensated', partner_state = ${partnerState}, compensated_at = now(),
           last_error_type = NULL, last_error = NULL, updated_at = now()
     WHERE id = ${actionId}::uuid AND state = 'compensating'`;
}

/** Hands the action to a human (`needs_manual`) with `error`, unless it is final already. */
export async function markNeedsManual(
  db: Pick<PrismaClient, '$executeRaw'>,
  actionId: string,
  error: { type: string; message: string },
): Promise<void> {
  await db.$executeRaw`
    UPDATE downstream_action SET state = 'needs_manual', last_error_type = ${error.type},
           last_error = ${error.message}, updated_at = now()
     WHERE id = ${actionId}::uuid AND state NOT IN ('compensated', 'not_applied', 'resolved')`;
}
