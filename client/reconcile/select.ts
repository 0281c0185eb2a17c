/** Which runs a reconcile looks at: one run, or every run of a business date. */
import type { FetchRun } from '../../prisma/generated/client.ts';
import { UserFacingError } from '../../worker/errors.ts';
import { dateColumn, isBusinessDate, isSourceId } from '../../workflows/business-key.ts';
import { getRun } from '../runs.ts';
import type { ReconcileContext, ReconcileSelector } from './context.ts';

/**
 * The runs a selector names: one run, or every run of a date (optionally of one source) in
 * source order. Read-only.
 * @throws UserFacingError INVALID_INPUT (not exactly one of run id and date, a malformed date or
 *   source id), NOT_FOUND (no such run or source).
 */
export async function selectRuns(ctx: ReconcileContext, selector: ReconcileSelector): Promise<FetchRun[]> {
  const { runId, date, sourceId } = selector;
  if ((runId === undefined) === (date === undefined)) {
    throw new UserFacingError('give exactly one of a run id or --date', 'INVALID_INPUT');
  }
  if (runId !== undefined) {
    if (sourceId !== undefined) {
      throw new UserFacingError('--source goes with --date, not with a run id', 'INVALID_INPUT');
    }
    const run = await getRun(ctx, runId);
    if (!run) throw new UserFacingError(`no run '${runId}'`, 'NOT_FOUND');
    return [run];
  }
  if (date === undefined || !isBusinessDate(date)) {
    throw new UserFacingError(`--date must be a calendar date YYYY-MM-DD, got '${date}'`, 'INVALID_INPUT');
  }
  if (sourceId !== undefined) {
    if (!isSourceId(sourceId)) throw new UserFacingError(`'${sourceId}' is not a source id`, 'INVALID_INPUT');
    const source = await ctx.prisma.source.findUnique({ where: { id: sourceId }, select: { id: true } });
    if (!source) throw new UserFacingError(`no source '${sourceId}'`, 'NOT_FOUND');
  }
  return ctx.prisma.fetchRun.findMany({
    where: { businessDate: dateColumn(date), ...(sourceId === undefined ? {} : { sourceId }) },
    orderBy: [{ sourceId: 'asc' }, { jobType: 'asc' }],
  });
}
