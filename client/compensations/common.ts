/**
 * What the ledger's read and operator paths share: the row shape operators see (a ledger row with
 * its run's business key), the audit target, the note limit, and loading a row for an operator act
 * with the errors such an act reports.
 */
import type { DownstreamAction, RunStatus } from '../../prisma/generated/client.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import { isUuid } from '../ids.ts';
import type { DurableFetchContext } from '../start-fetch.ts';

/** `target_type` of the audit entries about a ledger row. */
export const COMPENSATION_TARGET = 'downstream_action';

/** Longest `--note` (resolve) or `--reason` (retry) kept. */
export const MAX_NOTE_LENGTH = 1000;

/** True when `id` has the shape of a ledger row id (a UUID). */
export function isCompensationId(id: string): boolean {
  return isUuid(id);
}

/** A ledger row with the business key of its run (`businessDate` written `YYYY-MM-DD`). */
export type Compensation = DownstreamAction & { sourceId: string; businessDate: string };

export type PrismaCtx = Pick<DurableFetchContext, 'prisma'>;

export const RUN_KEY = { select: { sourceId: true, businessDate: true } } as const;

/** The run fields an operator act (and `show`) needs: the key, the status and the run's workflow. */
export const RUN_DETAIL = {
  select: {
    id: true,
    jobType: true,
    sourceId: true,
    businessDate: true,
    status: true,
    workflowId: true,
  },
} as const;

export function flatten(
  row: DownstreamAction & { run: { sourceId: string; businessDate: Date } },
): Compensation {
  const { run, ...rest } = row;
  return { ...rest, sourceId: run.sourceId, businessDate: dateText(run.businessDate) };
}

export function dateText(date: Date): string {
  return date.toISOString().slice(0, 10);
}

export type LoadedRow = DownstreamAction & {
  run: {
    id: string;
    jobType: string;
    sourceId: string;
    businessDate: Date;
    status: RunStatus;
    workflowId: string;
  };
};

/** The row an operator acts on, with its run. @throws UserFacingError NOT_FOUND. */
export async function loadRow(ctx: PrismaCtx, id: string): Promise<LoadedRow> {
  const row = isCompensationId(id)
    ? await ctx.prisma.downstreamAction.findUnique({ where: { id }, include: { run: RUN_DETAIL } })
    : null;
  if (!row) throw new UserFacingError(`no compensation '${id}'`, 'NOT_FOUND');
  return row;
}

export function notNeedsManual(id: string, state: string, verb: 'resolved' | 'retried'): UserFacingError {
  return new UserFacingError(
    `compensation ${id} is ${state}: only needs_manual can be ${verb}`,
    'INVALID_STATE',
  );
}

/** The row's state now, for the message of a conditional update that matched nothing. */
export async function stateNow(ctx: PrismaCtx, id: string): Promise<string> {
  const row = await ctx.prisma.downstreamAction.findUnique({ where: { id }, select: { state: true } });
  return row?.state ?? 'gone';
}
