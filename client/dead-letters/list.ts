/** `dlq list`: dead letters by source, job type, error type, time and status. */
import type { DeadLetterStatus } from '../../prisma/generated/client.ts';
import { type DeadLetterView, type PrismaCtx, view } from './view.ts';

export interface ListDeadLettersFilter {
  /** Only letters of this job type, e.g. `exchange-rates`. */
  jobType?: string;
  sourceId?: string;
  /** DESIGN error type, e.g. `InvalidInput`. */
  errorType?: string;
  /** Only letters written at or after this time. */
  since?: Date;
  /** Default `open`; `all` for every status. */
  status?: DeadLetterStatus | 'all';
  /** Newest first; default 50, at most 1000. */
  limit?: number;
}

/** Dead letters, newest first. Read-only. */
export async function listDeadLetters(
  ctx: PrismaCtx,
  filter: ListDeadLettersFilter = {},
): Promise<DeadLetterView[]> {
  const status = filter.status ?? 'open';
  const rows = await ctx.prisma.deadLetter.findMany({
    where: {
      ...(status === 'all' ? {} : { status }),
      ...(filter.jobType === undefined ? {} : { jobType: filter.jobType }),
      ...(filter.sourceId === undefined ? {} : { sourceId: filter.sourceId }),
      ...(filter.errorType === undefined ? {} : { errorType: filter.errorType }),
      ...(filter.since === undefined ? {} : { createdAt: { gte: filter.since } }),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    take: Math.min(Math.max(filter.limit ?? 50, 1), 1000),
  });
  return rows.map(view);
}
