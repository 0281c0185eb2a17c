/** Which runs a reconcile looks at: one run, or every run of a business date. */
import type { FetchRun } from '../../prisma/generated/client.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import { dateColumn, isBusinessDate, isJobType, isSourceId } from '../../contract/business-key.ts';
import { getRun } from '../runs.ts';
import type { ReconcileContext, ReconcileSelector } from './context.ts';

/**
 * The runs a selector names: one run, or every run of a date (optionally of one source, of one
 * job type) in source order. Read-only.
 * @throws UserFacingError INVALID_INPUT (not exactly one of run id and date, a source or job type
 *   with a run id, a malformed date, source id or job type), NOT_FOUND (no such run or source).
 *   An unknown job type is no error: it has no runs.
 */
export async function selectRuns(ctx: ReconcileContext, selector: ReconcileSelector): Promise<FetchRun[]> {
  const { runId, date, sourceId, jobType } = selector;
  if ((runId === undefined) === (date === undefined)) {
    throw new UserFacingError('give exactly one of a run id or --date', 'INVALID_INPUT');
  }
  if (runId !== undefined) {
    if (sourceId !== undefined) {
      throw new UserFacingError('--source goes with --date, not with a run id', 'INVALID_INPUT');
    }
    if (jobType !== undefined) {
      throw new UserFacingError('--job goes with --date, not with a run id', 'INVALID_INPUT');
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
  if (jobType !== undefined && !isJobType(jobType)) {
    throw new UserFacingError(`'${jobType}' is not a job type`, 'INVALID_INPUT');
  }
  return ctx.prisma.fetchRun.findMany({
    where: {
      businessDate: dateColumn(date),
      ...(sourceId === undefined ? {} : { sourceId }),
      ...(jobType === undefined ? {} : { jobType }),
    },
    orderBy: [{ sourceId: 'asc' }, { jobType: 'asc' }],
  });
}
