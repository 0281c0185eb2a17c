/**
 * Removing a source (`durable-fetch sources remove`): a soft removal. The row stays, disabled and
 * marked `removed_at/removed_by`, so that its runs, records, dead letters and audit trail keep
 * pointing at it and its id is never given to another source. From then on it is left out of
 * `sources list` and of `schedules sync`, refused by `run` and by a claim at run time, while the
 * compensation of its past runs still works (activities/sources.ts `loadSource`).
 */
import { recordAudit } from '../../db/audit.ts';
import { NOT_FINAL_STATES } from '../../contract/states.ts';
import type { Prisma, Source } from '../../prisma/generated/client.ts';
import { errorMessage, UserFacingError } from '../../runtime/errors.ts';
import { checkActor } from '../audit.ts';
import { OPEN_RUN_STATUSES } from '../runs.ts';
import { findScheduleId, syncSourceSchedule } from '../schedules.ts';
import { checkReason, changeLiveSource, oneLine, SOURCE_TARGET, type TemporalCtx } from './common.ts';

export interface RemoveOptions {
  /** Who. */
  actor: string;
  /** Why (1..1000 characters; audited). */
  reason: string;
}

export interface RemovedSource {
  source: Source;
  scheduleId: string;
  /** True when the source had a Temporal Schedule (on this task queue) and it is now deleted. */
  scheduleDeleted: boolean;
}

/**
 * Actions of the source that may still hold an effect to settle: the ledger's unsettled states,
 * except the confirmed action of a run that succeeded (its effect is the run's result, final) —
 * unless it is a stray, which is voided whatever its run's outcome.
 */
function unsettledOf(sourceId: string): Prisma.DownstreamActionWhereInput {
  return {
    run: { sourceId },
    state: { in: [...NOT_FINAL_STATES] },
    NOT: { state: 'confirmed', strayOf: null, run: { status: 'succeeded' } },
  };
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** What keeps a source from being removed: its open runs and its unsettled actions. */
export interface SourceBusy {
  openRuns: number;
  unsettled: number;
}

/** The open runs and unsettled actions of source `id`; none of either: it may be removed. Read-only. */
export async function busyOf(tx: Prisma.TransactionClient, id: string): Promise<SourceBusy> {
  const [openRuns, unsettled] = await Promise.all([
    tx.fetchRun.count({ where: { sourceId: id, status: { in: [...OPEN_RUN_STATUSES] } } }),
    tx.downstreamAction.count({ where: unsettledOf(id) }),
  ]);
  return { openRuns, unsettled };
}

/** Why source `id` cannot be removed, with what to do, on one line. */
export function busyMessage(id: string, busy: SourceBusy): string {
  const why = [
    busy.openRuns > 0
      ? `${plural(busy.openRuns, 'open run', 'open runs')} (queued, running or waiting to retry): let them finish or cancel them (\`durable-fetch runs list --source ${id}\`)`
      : '',
    busy.unsettled > 0
      ? `${plural(busy.unsettled, 'unsettled downstream action', 'unsettled downstream actions')}: settle them first (\`durable-fetch compensations list\`)`
      : '',
  ].filter(Boolean);
  return `cannot remove source '${id}': it has ${why.join('; and ')}`;
}

/**
 * Marks `current` (locked, not removed, not busy) removed and disabled, and writes the audit entry
 * `source.remove`, through `tx`. Its schedule is left to the caller. Not idempotent.
 */
export async function markRemoved(
  tx: Prisma.TransactionClient,
  current: Source,
  audit: { actor: string; reason: string; scheduleId: string },
): Promise<Source> {
  const removedAt = new Date();
  const source = await tx.source.update({
    where: { id: current.id },
    data: { enabled: false, removedAt, removedBy: audit.actor },
  });
  await recordAudit(tx, {
    actor: audit.actor,
    action: 'source.remove',
    targetType: SOURCE_TARGET,
    targetId: current.id,
    reason: audit.reason,
    details: {
      removedAt: removedAt.toISOString(),
      wasEnabled: current.enabled,
      scheduleId: audit.scheduleId,
    },
  });
  return source;
}

/**
 * Removes a source: refused while a run of it is open (queued, running, waiting to retry) or an
 * action of it is unsettled. Otherwise disables it, sets `removed_at/removed_by` and writes the
 * audit entry `source.remove` in one transaction, then deletes its Temporal Schedule. Keeps its
 * runs, records and audit trail. Not idempotent: removing a removed source is refused.
 * @throws UserFacingError NOT_FOUND, SOURCE_REMOVED (already), SOURCE_BUSY (open runs or unsettled
 *   actions; nothing is changed), INVALID_INPUT, SCHEDULE_DELETE_FAILED (the source is removed,
 *   its schedule is not deleted yet).
 */
export async function removeSource(
  ctx: TemporalCtx,
  id: string,
  options: RemoveOptions,
): Promise<RemovedSource> {
  const reason = checkReason(options.reason);
  const actor = checkActor(options.actor);
  const scheduleId = await findScheduleId(ctx, id);
  const outcome = await changeLiveSource(ctx, id, async (tx, current) => {
    const busy = await busyOf(tx, id);
    if (busy.openRuns > 0 || busy.unsettled > 0) return { kind: 'busy' as const, busy };
    return { kind: 'done' as const, source: await markRemoved(tx, current, { actor, reason, scheduleId }) };
  });
  if (outcome.kind === 'busy') throw new UserFacingError(busyMessage(id, outcome.busy), 'SOURCE_BUSY');
  let scheduleDeleted: boolean;
  try {
    // The source is removed now, so syncing it deletes its schedule.
    scheduleDeleted = (await syncSourceSchedule(ctx, id))?.change === 'deleted';
  } catch (err) {
    throw new UserFacingError(
      `source '${id}' is removed, but its schedule ${scheduleId} could not be deleted: ${oneLine(errorMessage(err))}; \`durable-fetch schedules sync\` deletes it`,
      'SCHEDULE_DELETE_FAILED',
      { cause: err },
    );
  }
  return { source: outcome.source, scheduleId, scheduleDeleted };
}
