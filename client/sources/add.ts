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
import { defaultJobs } from '../../worker/jobs.ts';
import { isSourceId } from '../../workflows/business-key.ts';
import { checkActor } from '../audit.ts';
import { desiredSchedule, scheduleIdFor } from '../schedule-spec.ts';
import { type SyncChange, syncSourceSchedule } from '../schedules.ts';
import { checkReason, removedError, SOURCE_TARGET, type TemporalCtx } from './common.ts';
import { checkFields, checkJobConfig, isTimeZone, type SourceChanges } from './fields.ts';

/** A new source. Unset settings take the column defaults (engine.prisma). */
export interface NewSource extends Omit<SourceChanges, 'enabled'> {
  id: string;
  /** The partner's http(s) base URL, without credentials. */
  baseUrl: string;
  /** A job type of the registry. */
  jobType: string;
  /** The source's schedule (client/schedule-spec.ts); none: it runs only when started. */
  schedule?: unknown;
  /** The name of the downstream the source's actions go to (default `default`). */
  downstream?: string;
}

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
  /** `<taskQueue>/fetch-records/<sourceId>` when the source has a schedule. */
  scheduleId: string | null;
  /** What happened to its schedule: `created` (or `updated`, over a stray of the same id). */
  schedule: SyncChange['change'] | null;
}

const DOWNSTREAM_RE = /^[a-z][a-z0-9_-]{0,62}$/;

type AddCtx = TemporalCtx & { jobs?: JobRegistry; maxFutureDays?: number };

/** Every problem of `input` that needs no database, one line each. */
function problemsOf(
  ctx: AddCtx,
  input: NewSource,
): { problems: string[]; fields: SourceChanges; config: unknown } {
  const problems: string[] = [];
  if (!isSourceId(input.id)) {
    problems.push(`<id>: invalid source id '${input.id}': use 1..63 of a-z, 0-9, '-' and '_'`);
  }
  const { id, schedule, downstream, jobType, config: rawConfig, ...fields } = input;
  const checked = checkFields(fields, ['baseUrl']);
  if (!checked.ok) problems.push(...checked.problems);
  const job = checkJobConfig(ctx.jobs ?? defaultJobs(), jobType, rawConfig);
  if (!job.ok) problems.push(...job.problems);
  else if (input.submitSummary && !job.hasDownstream) {
    problems.push(`--submit-summary: job '${jobType}' has no downstream action to submit to`);
  }
  if (downstream !== undefined && !DOWNSTREAM_RE.test(downstream)) {
    problems.push("--downstream: expected a name of 1..63 a-z, 0-9, '-' and '_'");
  }
  if (schedule !== undefined && schedule !== null) {
    // The timezone's own problem is reported above; the schedule is checked in UTC then.
    const timezone = input.timezone !== undefined && isTimeZone(input.timezone) ? input.timezone : 'UTC';
    const d = desiredSchedule({ id, jobType, timezone, schedule }, ctx.taskQueue, ctx.maxFutureDays ?? 0);
    if ('problem' in d)
      problems.push(`--schedule: ${d.problem.replace(/^source '[^']*': (schedule )?/, '')}`);
  }
  return { problems, fields: checked.ok ? checked.fields : {}, config: job.ok ? job.config : undefined };
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
  const { problems, fields, config } = problemsOf(ctx, input);
  problems.push(...(options.inputProblems ?? []));
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
  const { schedule } = input;
  const data: Prisma.SourceCreateInput = {
    ...(fields as Omit<SourceChanges, 'config'>),
    id: input.id,
    baseUrl: fields.baseUrl ?? input.baseUrl,
    jobType: input.jobType,
    ...(input.downstream === undefined ? {} : { downstream: input.downstream }),
    name: fields.name ?? input.id,
    config: config as Prisma.InputJsonValue,
    ...(schedule === undefined || schedule === null ? {} : { schedule: schedule }),
  };
  const scheduleId = data.schedule === undefined ? null : scheduleIdFor(ctx.taskQueue, input.id);
  try {
    return await ctx.prisma.$transaction(
      async (tx) => {
        const source = await tx.source.create({ data });
        await recordAudit(tx, {
          actor,
          action: 'source.add',
          targetType: SOURCE_TARGET,
          targetId: input.id,
          reason,
          details: { set: { ...data }, scheduleId } as Prisma.InputJsonObject,
        });
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
