/** Reading sources for operators: the listing, one source in detail, and how a few columns read. */
import type { AuditEntry, Source } from '../../prisma/generated/client.ts';
import { isSourceId } from '../../contract/business-key.ts';
import { sourceScheduleSchema } from '../schedule-spec.ts';
import { countRunning, oneLine, type PrismaCtx, SOURCE_TARGET } from './common.ts';

/** A source with its most recent audit entries (oldest first) and how many of its runs are running. */
export type SourceDetail = Source & { audit: AuditEntry[]; runningRuns: number };

/** Sources, by id; removed ones only with `all`. Read-only. */
export async function listSources(ctx: PrismaCtx, opts: { all?: boolean } = {}): Promise<Source[]> {
  return ctx.prisma.source.findMany({
    where: opts.all ? {} : { removedAt: null },
    orderBy: { id: 'asc' },
  });
}

/**
 * One source (removed ones too) with its last `auditLimit` (default 20) audit entries and the
 * number of its running runs; undefined when there is none. Read-only.
 */
export async function getSource(
  ctx: PrismaCtx,
  id: string,
  opts: { auditLimit?: number } = {},
): Promise<SourceDetail | undefined> {
  if (!isSourceId(id)) return undefined;
  const source = await ctx.prisma.source.findUnique({ where: { id } });
  if (!source) return undefined;
  const [recent, runningRuns] = await Promise.all([
    ctx.prisma.auditEntry.findMany({
      where: { targetType: SOURCE_TARGET, targetId: id },
      orderBy: [{ at: 'desc' }, { id: 'desc' }],
      take: Math.min(Math.max(opts.auditLimit ?? 20, 1), 1000),
    }),
    countRunning(ctx, id),
  ]);
  return { ...source, audit: recent.reverse(), runningRuns };
}

/** One line describing a source's `schedule` column: `cron 0 2 * * *`, `every 1h`, `none`, `invalid`. */
export function scheduleSummary(schedule: unknown): string {
  if (schedule === null || schedule === undefined) return 'none';
  const parsed = sourceScheduleSchema.safeParse(schedule);
  if (!parsed.success) return 'invalid';
  const s = parsed.data;
  if (s.every !== undefined) return `every ${s.every}`;
  return `cron ${Array.isArray(s.cron) ? s.cron.join(' | ') : (s.cron ?? '')}`;
}

/** `paused since <iso> by <who> (<reason>)`, on one line. */
export function pauseText(source: Pick<Source, 'pausedAt' | 'pausedBy' | 'pausedReason'>): string {
  if (!source.pausedAt) return 'not paused';
  const by = source.pausedBy ? ` by ${oneLine(source.pausedBy)}` : '';
  const why = source.pausedReason ? ` (${oneLine(source.pausedReason)})` : '';
  return `paused since ${source.pausedAt.toISOString()}${by}${why}`;
}
