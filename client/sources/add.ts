/**
 * Adding a source (`durable-fetch sources add`): every value is checked before anything is
 * written, with the same rules `sources update` and `schedules sync` apply, and every problem is
 * reported at once. The row and its audit entry are written in one transaction, and its schedule
 * is created before that transaction commits: a schedule Temporal refuses leaves no source behind.
 */
import { recordAudit } from '../../db/audit.ts';
import type { JobRegistry } from '../../activities/job-api/registry.ts';
import { codeOf } from '../../activities/errors.ts';
import type { Prisma, Source } from '../../prisma/generated/client.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import { defaultJobs } from '../../jobs/registry.ts';
import { isSourceId } from '../../contract/business-key.ts';
import { checkActor } from '../audit.ts';
import { scheduleIdFor } from '../schedule-spec.ts';
import { type SyncChange, syncSourceSchedule } from '../schedules.ts';
import { checkReason, removedError, SOURCE_TARGET, type TemporalCtx } from './common.ts';
import { type CheckedSource, checkNewSource, type NewSource } from './check.ts';
import type { SourceChanges } from './fields.ts';

export type { NewSource } from './check.ts';

export interface AddOptions {
  /** Who. */
  actor: string;
  /** Why (1..1000 characters; audited). */
  reason: string;
  /** Problems the caller found reading its input (a `--config` that is not JSON): reported with the others. */
  inputProblems?: readonly string[];
}

export interface AddedSource {
  source: Source;
  /** `<taskQueue>/<jobType>/<sourceId>` when the source has a schedule. */
  scheduleId: string | null;
  /** What happened to its schedule: `created` (or `updated`, over a stray of the same id). */
  schedule: SyncChange['change'] | null;
}

type AddCtx = TemporalCtx & { jobs?: JobRegistry; maxFutureDays?: number };

/** The row of a checked new source: its checked fields and parsed config; the name defaults to the id. */
export function newSourceData(input: NewSource, checked: CheckedSource): Prisma.SourceCreateInput {
  const { schedule } = input;
  return {
    ...(checked.fields as Omit<SourceChanges, 'config'>),
    id: input.id,
    baseUrl: checked.fields.baseUrl ?? input.baseUrl,
    jobType: input.jobType,
    ...(input.downstream === undefined ? {} : { downstream: input.downstream }),
    name: checked.fields.name ?? input.id,
    config: checked.config as Prisma.InputJsonValue,
    ...(schedule === undefined || schedule === null ? {} : { schedule: schedule }),
  };
}

/**
 * Inserts the source row `data` and its audit entry `source.add` (the fields set; a credentials
 * reference by name only) through `tx`. Not idempotent. @throws Prisma P2002 when the id is taken.
 */
export async function insertSource(
  tx: Prisma.TransactionClient,
  data: Prisma.SourceCreateInput,
  audit: { actor: string; reason: string; scheduleId: string | null },
): Promise<Source> {
  const source = await tx.source.create({ data });
  await recordAudit(tx, {
    actor: audit.actor,
    action: 'source.add',
    targetType: SOURCE_TARGET,
    targetId: data.id,
    reason: audit.reason,
    details: { set: { ...data }, scheduleId: audit.scheduleId } as Prisma.InputJsonObject,
  });
  return source;
}

/**
 * Adds a source after checking every value (id format and uniqueness, job type, base URL,
 * credentials reference, timezone, page size, retry preset, schedule with the future-date policy,
 * the job's config, `submitSummary` only for a job with a downstream action). Writes the row
 * (with the parsed config, its defaults applied) and the audit entry `source.add` (the fields
 * set; a credentials reference by name only) in one transaction, and creates its Temporal
 * Schedule, when it has one, before committing. Not idempotent: a second add of the id is refused.
 * @throws UserFacingError INVALID_INPUT listing every problem, one per line (nothing is written),
 *   SOURCE_EXISTS, SOURCE_REMOVED (ids are never reused), INVALID_SCHEDULE (Temporal refused it).
 */
export async function addSource(ctx: AddCtx, input: NewSource, options: AddOptions): Promise<AddedSource> {
  const reason = checkReason(options.reason);
  const actor = checkActor(options.actor);
  const checked = checkNewSource(
    { jobs: ctx.jobs ?? defaultJobs(), maxFutureDays: ctx.maxFutureDays ?? 0 },
    input,
  );
  const problems = [...checked.problems, ...(options.inputProblems ?? [])];
  if (isSourceId(input.id)) {
    const taken = await ctx.prisma.source.findUnique({ where: { id: input.id } });
    if (taken?.removedAt) problems.unshift(`<id>: ${removedError(taken).message}`);
    else if (taken) problems.unshift(`<id>: source '${input.id}' already exists`);
  }
  if (problems.length > 0) {
    throw new UserFacingError(
      [`cannot add source '${input.id}':`, ...problems.map((p) => `  ${p}`)].join('\n'),
      'INVALID_INPUT',
    );
  }
  const data = newSourceData(input, checked);
  const scheduleId =
    data.schedule === undefined
      ? null
      : scheduleIdFor(ctx.taskQueue, { id: input.id, jobType: input.jobType });
  try {
    return await ctx.prisma.$transaction(
      async (tx) => {
        const source = await insertSource(tx, data, { actor, reason, scheduleId });
        // Inside the transaction: the schedule sees the new row, and a refusal rolls it back.
        const change = scheduleId ? await syncSourceSchedule({ ...ctx, prisma: tx }, input.id) : undefined;
        return { source, scheduleId, schedule: change?.change ?? null };
      },
      { timeout: 30_000 },
    );
  } catch (err) {
    // Added meanwhile by someone else: the primary key says so.
    if (codeOf(err) === 'P2002') {
      const now = await ctx.prisma.source.findUnique({ where: { id: input.id } });
      if (now?.removedAt) throw removedError(now);
      throw new UserFacingError(`source '${input.id}' already exists`, 'SOURCE_EXISTS');
    }
    throw err;
  }
}
