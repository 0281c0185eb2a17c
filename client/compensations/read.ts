/**
 * Reading the compensation ledger (`compensations list`, `show`, and the needs_manual count the
 * status screen and the metric use). Read-only: nothing here changes a row.
 */
import type { AuditEntry, DownstreamState, RunStatus } from '../../prisma/generated/client.ts';
import { compensationIdOf } from './start.ts';
import {
  type Compensation,
  COMPENSATION_TARGET,
  dateText,
  flatten,
  isCompensationId,
  type PrismaCtx,
  RUN_DETAIL,
  RUN_KEY,
} from './common.ts';

/** One row with its run, its audit trail (oldest first) and its compensation's workflow id. */
export type CompensationDetail = Compensation & {
  run: { id: string; sourceId: string; businessDate: string; status: RunStatus; workflowId: string };
  audit: AuditEntry[];
  /** `compensate/<jobType>/<source>/<date>/r<round>`: the workflow that undoes the claim's actions. */
  compensationWorkflowId: string;
};

export interface ListCompensationsFilter {
  state?: DownstreamState;
  sourceId?: string;
  /** Only strays: effects at the partner the ledger did not expect (voided by the compensation path). */
  strays?: boolean;
  /** Newest `updatedAt` first; default 50, at most 1000. */
  limit?: number;
}

/** Ledger rows, most recently changed first. Read-only. */
export async function listCompensations(
  ctx: PrismaCtx,
  filter: ListCompensationsFilter = {},
): Promise<Compensation[]> {
  const rows = await ctx.prisma.downstreamAction.findMany({
    where: {
      state: filter.state,
      ...(filter.sourceId === undefined ? {} : { run: { sourceId: filter.sourceId } }),
      ...(filter.strays ? { strayOf: { not: null } } : {}),
    },
    include: { run: RUN_KEY },
    orderBy: [{ updatedAt: 'desc' }, { id: 'asc' }],
    take: Math.min(Math.max(filter.limit ?? 50, 1), 1000),
  });
  return rows.map(flatten);
}

/**
 * One ledger row by id, with its run and audit trail; undefined when there is none (or `id` is not
 * a UUID). Read-only.
 */
export async function getCompensation(ctx: PrismaCtx, id: string): Promise<CompensationDetail | undefined> {
  if (!isCompensationId(id)) return undefined;
  const row = await ctx.prisma.downstreamAction.findUnique({ where: { id }, include: { run: RUN_DETAIL } });
  if (!row) return undefined;
  const audit = await ctx.prisma.auditEntry.findMany({
    where: { targetType: COMPENSATION_TARGET, targetId: row.id },
    orderBy: [{ at: 'asc' }, { id: 'asc' }],
  });
  const businessDate = dateText(row.run.businessDate);
  return {
    ...flatten(row),
    run: { ...row.run, businessDate },
    audit,
    compensationWorkflowId: compensationIdOf(row.run.jobType, {
      sourceId: row.run.sourceId,
      businessDate,
      round: row.round,
    }),
  };
}

/**
 * Rows waiting for an operator (`needs_manual`), optionally of one source. This is the number to
 * alert on: it is exported as a metric (a gauge that should be 0). Read-only.
 */
export async function countNeedsManual(ctx: PrismaCtx, filter: { sourceId?: string } = {}): Promise<number> {
  return ctx.prisma.downstreamAction.count({
    where: {
      state: 'needs_manual',
      ...(filter.sourceId === undefined ? {} : { run: { sourceId: filter.sourceId } }),
    },
  });
}
