/**
 * The compensation ledger's activity helpers (R4): how a row is handed to workflows, the error
 * fields a failed step records, and loading an action that must exist. The ledger's statements
 * and state sets are in db/ledger/.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { type ActionRow, type ActionState, findAction, findActionState } from '../../db/ledger/ledger.ts';
import { MAX_KEPT_MESSAGE } from '../../db/limits.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import type { DownstreamActionView } from '../../contract/types.ts';
import { classify, failure } from '../errors.ts';

export function view(row: ActionState): DownstreamActionView {
  return { actionId: row.id, state: row.state, attempts: row.attempts, partnerId: row.partnerId };
}

/** The failure's type and a short message, for the row's `last_error*` columns. */
export function errorFields(err: unknown, what: string): { type: string; message: string } {
  const f = classify(err, what);
  if (f instanceof ApplicationFailure)
    return { type: f.type ?? 'Internal', message: f.message.slice(0, MAX_KEPT_MESSAGE) };
  return { type: 'Cancelled', message: `${what}: cancelled` };
}

export function outcomeUnknown(message: string): ApplicationFailure {
  return failure('OutcomeUnknown', 'OUTCOME_UNKNOWN', message);
}

/** @throws ApplicationFailure NotFound when the action does not exist. */
export async function loadAction(
  prisma: Pick<PrismaClient, 'downstreamAction'>,
  actionId: string,
): Promise<ActionRow> {
  const row = await findAction(prisma, actionId);
  if (!row) throw actionNotFound(actionId);
  return row;
}

function actionNotFound(actionId: string): ApplicationFailure {
  return failure('NotFound', 'ACTION_NOT_FOUND', `downstream action ${actionId} does not exist`);
}

/** {@link loadAction} without the run: what a claim acts on. @throws ApplicationFailure NotFound. */
export async function loadActionState(
  prisma: Pick<PrismaClient, 'downstreamAction'>,
  actionId: string,
): Promise<ActionState> {
  const row = await findActionState(prisma, actionId);
  if (!row) throw actionNotFound(actionId);
  return row;
}
