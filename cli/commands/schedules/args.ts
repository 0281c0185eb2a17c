/**
 * Arguments shared by the `durable-fetch schedules` subcommands: a source or schedule id resolved
 * to its Temporal Schedule, the --overlap policy and the business dates of --from/--to.
 */
import { InvalidArgumentError } from 'commander';
import type { ScheduleOverlapPolicy } from '@temporalio/client';
import { UserFacingError } from '../../../runtime/errors.ts';
import { isBusinessDate } from '../../../contract/business-key.ts';
import type { CliContext } from '../../context.ts';
import { OVERLAP_POLICIES } from '../../../client/overlap-policies.ts';

/** `--overlap <policy>`: one of OVERLAP_POLICIES (any case, '-' or '_'), or commander's usage error. */
export function parseOverlap(value: string): ScheduleOverlapPolicy {
  const key = value.toLowerCase().replaceAll('-', '_');
  if (!(OVERLAP_POLICIES as readonly string[]).includes(key)) {
    throw new InvalidArgumentError(`expected one of ${OVERLAP_POLICIES.join(', ')}`);
  }
  return key.toUpperCase() as ScheduleOverlapPolicy;
}

/** A business date option (YYYY-MM-DD), or commander's usage error. */
export function parseDate(value: string): string {
  if (!isBusinessDate(value)) throw new InvalidArgumentError('expected a date YYYY-MM-DD');
  return value;
}

/**
 * The schedule `id` names (a source id or a schedule id) with its description, read from Temporal.
 * Reads only. @throws UserFacingError NOT_FOUND when this deployment has no such schedule.
 */
export async function scheduleOf(ctx: () => CliContext, id: string) {
  const [{ ScheduleNotFoundError }, { findScheduleId }] = await Promise.all([
    import('@temporalio/client'),
    import('../../../client/schedules.ts'),
  ]);
  const c = ctx();
  const temporal = await c.temporal();
  // A schedule id as given; a source's schedule under its id, or under its legacy one until
  // `schedules sync` migrates it (its job, read from its row, names the id).
  const scheduleId = id.includes('/')
    ? id
    : await findScheduleId(
        { temporal, prisma: await c.prisma(), taskQueue: c.config.temporal.taskQueue },
        id,
      );
  const handle = temporal.schedule.getHandle(scheduleId);
  try {
    return { handle, description: await handle.describe(), scheduleId };
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) {
      throw new UserFacingError(
        `no schedule '${scheduleId}' (run \`durable-fetch schedules sync\`?)`,
        'NOT_FOUND',
      );
    }
    throw err;
  }
}
