/**
 * Correcting a source's configuration (R11 "fix the input"), its schedule and its downstream,
 * audited with before and after; its Temporal Schedule follows a change of what it is built from.
 */
import type { Client } from '@temporalio/client';
import type { JobRegistry } from '../../activities/job-api/registry.ts';
import { recordAudit } from '../../db/audit.ts';
import { DEFAULT_DOWNSTREAM, listDownstreams } from '../../db/ledger/downstreams.ts';
import { Prisma, type Source } from '../../prisma/generated/client.ts';
import { errorMessage, isUserFacingError, UserFacingError } from '../../runtime/errors.ts';
import { defaultJobs } from '../../jobs/registry.ts';
import { isSourceId } from '../../contract/business-key.ts';
import { checkActor } from '../audit.ts';
import { scheduleIdFor, sourceScheduleSchema } from '../schedule-spec.ts';
import {
  outOfLine,
  resyncSchedules,
  type SyncChange,
  type SyncContext,
  syncSourceSchedule,
} from '../schedules.ts';
import { scheduleProblems } from './check.ts';
import {
  changeLiveSource,
  checkReason,
  notFound,
  oneLine,
  type PrismaCtx,
  removedError,
  SOURCE_TARGET,
} from './common.ts';
import { canonicalJson } from './canonical-json.ts';
import {
  checkFields,
  checkJobConfig,
  CLI_NAMING,
  downstreamSchema,
  FIELD_OPTIONS,
  type SourceChanges,
  type SourceField,
} from './fields.ts';

export interface UpdateOptions {
  /** Who. */
  actor: string;
  /** Why (1..1000 characters; kept in the audit trail). */
  reason: string;
}

/**
 * What `updateSource` may change: the settings, the schedule and the downstream. Undefined leaves
 * a value as it is.
 */
export interface SourceUpdate extends SourceChanges {
  /**
   * When it runs on its own (client/schedule-spec.ts: the forms `sources add --schedule` takes);
   * null: never (it runs only when started).
   */
  schedule?: unknown;
  /** The downstream its actions go to: `default`, a row of the `downstream` table, or one a live source names. */
  downstream?: string;
}

export interface UpdateContext extends PrismaCtx {
  /** The jobs sources may run (default: the deployment's, jobs/registry.ts). */
  jobs?: JobRegistry;
  /**
   * Temporal, connected on first use, and the task queue of the schedules: needed (and called)
   * only by a change of the schedule, timezone or enabled, which its Temporal Schedule follows.
   */
  temporal?: () => Promise<Client>;
  taskQueue?: string;
  /** The future-date policy (DURABLE_FETCH_MAX_FUTURE_DAYS): the largest `dateOffsetDays`. Default 0. */
  maxFutureDays?: number;
}

export interface UpdatedSource extends SourceDiff {
  source: Source;
  /** Its Temporal Schedule's id when the update changed what the schedule is built from, else null. */
  scheduleId: string | null;
  /**
   * What happened to that schedule (`created`, `updated`, `deleted`, `unchanged`); null when the
   * update did not touch it or there was none to delete.
   */
  schedule: SyncChange['change'] | null;
}

/** A column a change may set: the settings, and (from a sources file) the downstream and the schedule. */
export type UpdatableField = SourceField | 'downstream' | 'schedule';

const UPDATABLE: readonly UpdatableField[] = [
  ...(Object.keys(FIELD_OPTIONS) as SourceField[]),
  'downstream',
  'schedule',
];

/** The fields of a change whose value differs, in a fixed order, with their values before and after. */
export interface SourceDiff<F extends UpdatableField = UpdatableField> {
  changed: F[];
  before: Partial<Record<F, unknown>>;
  after: Partial<Record<F, unknown>>;
}

const same = (a: unknown, b: unknown) => a === b || canonicalJson(a) === canonicalJson(b);

/** Schedules are equal when they mean the same: the defaults a schedule leaves out count. */
function sameSchedule(a: unknown, b: unknown): boolean {
  const [x, y] = [sourceScheduleSchema.safeParse(a), sourceScheduleSchema.safeParse(b)];
  return x.success && y.success ? same(x.data, y.data) : same(a, b);
}

/**
 * What `wanted` changes of `current`: the fields it gives (not undefined) whose value differs,
 * JSON values compared whatever their key order. Pure.
 */
export function diffSource<F extends UpdatableField>(
  current: Source,
  wanted: Partial<Record<F, unknown>>,
): SourceDiff<F> {
  const diff: SourceDiff<F> = { changed: [], before: {}, after: {} };
  for (const field of UPDATABLE as readonly F[]) {
    const value = wanted[field];
    const now: unknown = current[field];
    if (value === undefined || (field === 'schedule' ? sameSchedule(value, now) : same(value, now))) continue;
    diff.changed.push(field);
    diff.before[field] = now;
    diff.after[field] = value;
  }
  return diff;
}

/**
 * Writes `diff` (a non-empty one) to source `id` and its audit entry `source.update` with
 * `{ before, after }`, through `tx`. Not idempotent: each call adds an audit entry.
 */
export async function writeSourceUpdate(
  tx: Prisma.TransactionClient,
  id: string,
  diff: SourceDiff,
  audit: { actor: string; reason: string },
): Promise<Source> {
  const { after, before } = diff;
  // A JSON column is cleared with DbNull; a plain null would store the JSON value null.
  const data = { ...after, ...(after.schedule === null ? { schedule: Prisma.DbNull } : {}) };
  const source = await tx.source.update({ where: { id }, data: data as Prisma.SourceUpdateInput });
  await recordAudit(tx, {
    actor: audit.actor,
    action: 'source.update',
    targetType: SOURCE_TARGET,
    targetId: id,
    reason: audit.reason,
    details: { before, after } as Prisma.InputJsonObject,
  });
  return source;
}

/** The fields a Temporal Schedule is built from (with the source's id and job, which never change). */
const SCHEDULE_FIELDS: ReadonlySet<UpdatableField> = new Set(['schedule', 'timezone', 'enabled']);

/** Every option of an update, for the message of an update that gives none. */
const UPDATE_OPTIONS = [...Object.values(FIELD_OPTIONS), '--schedule/--no-schedule', '--downstream'];

/**
 * The problem of naming downstream `name` (its format checked already), or undefined: it exists
 * when it is `default` (the defaults, on the shared queue), a row of the `downstream` table (a
 * sources file's `downstreams`), or the downstream of a live source. Read-only.
 */
async function downstreamProblem(ctx: PrismaCtx, name: string): Promise<string | undefined> {
  if (name === DEFAULT_DOWNSTREAM) return undefined;
  const [rows, used] = await Promise.all([
    listDownstreams(ctx.prisma),
    ctx.prisma.source.findMany({
      where: { removedAt: null },
      distinct: ['downstream'],
      select: { downstream: true },
    }),
  ]);
  const known = new Set([DEFAULT_DOWNSTREAM, ...rows.map((d) => d.id), ...used.map((u) => u.downstream)]);
  if (known.has(name)) return undefined;
  return (
    `${CLI_NAMING.field('downstream')}: no downstream '${name}' (known: ${[...known].sort().join(', ')}): ` +
    "list it in a sources file's `downstreams` and `sources apply` it, or name one of those"
  );
}

/**
 * Validates `changes` (all of them, before anything is written; `config` by the source's job's
 * schema, its defaults applied; `schedule` as `sources add` checks it, in the timezone the source
 * will have; `downstream` must exist), then updates the source and writes the audit entry
 * `source.update` with `{ before, after }` of the fields that really changed, in one transaction.
 * Values that are already so change nothing (and are not audited); when none changes, nothing is
 * written. When the schedule, timezone or enabled changed, its Temporal Schedule is synced (created,
 * updated or deleted: `syncSourceSchedule`, as `sources add` and `sources apply` do) before the
 * transaction commits: a schedule Temporal refuses changes nothing. Never takes secret values:
 * `credentialsRef` names a DF_SECRET_* variable, and a base URL with credentials in it is refused.
 * The job type of a source never changes.
 * @throws UserFacingError NOT_FOUND, SOURCE_REMOVED, INVALID_INPUT naming every invalid value
 *   (nothing is changed), NO_CHANGES (no change given), INVALID_SCHEDULE (Temporal refused it;
 *   nothing is changed).
 */
export async function updateSource(
  ctx: UpdateContext,
  id: string,
  changes: SourceUpdate,
  options: UpdateOptions,
): Promise<UpdatedSource> {
  const reason = checkReason(options.reason);
  const actor = checkActor(options.actor);
  if (Object.values(changes).every((v) => v === undefined)) {
    throw new UserFacingError(
      `nothing to update: give at least one of ${UPDATE_OPTIONS.join(', ')}`,
      'NO_CHANGES',
    );
  }
  const { schedule, downstream, ...fields } = changes;
  const checked = checkFields(fields);
  const problems = checked.ok ? [] : [...checked.problems];
  if (!isSourceId(id)) throw await notFound(ctx, id);
  // The job type never changes, so the config can be checked before the transaction.
  const existing = await ctx.prisma.source.findUnique({ where: { id } });
  if (!existing) throw await notFound(ctx, id);
  if (existing.removedAt) throw removedError(existing);
  let config: unknown;
  if (changes.config !== undefined) {
    const job = checkJobConfig(ctx.jobs ?? defaultJobs(), existing.jobType, changes.config);
    if (job.ok) config = job.config;
    else problems.push(...job.problems);
  }
  if (schedule !== undefined && schedule !== null) {
    const timezone = fields.timezone ?? existing.timezone;
    const source = { id, jobType: existing.jobType, timezone, schedule };
    problems.push(...scheduleProblems(ctx.maxFutureDays ?? 0, source));
  }
  if (downstream !== undefined) {
    const parsed = downstreamSchema.safeParse(downstream);
    if (!parsed.success) {
      problems.push(...parsed.error.issues.map((i) => `${CLI_NAMING.field('downstream')}: ${i.message}`));
    } else if (downstream !== existing.downstream) {
      const problem = await downstreamProblem(ctx, downstream);
      if (problem) problems.push(problem);
    }
  }
  if (!checked.ok || problems.length > 0) {
    throw new UserFacingError(`invalid update of source '${id}': ${problems.join('; ')}`, 'INVALID_INPUT');
  }
  const wanted: Partial<Record<UpdatableField, unknown>> = {
    ...checked.fields,
    ...(config === undefined ? {} : { config }),
    schedule,
    downstream,
  };
  // A change its schedule follows syncs it: Temporal is connected before the row is locked.
  const touchesSchedule = Object.keys(wanted).some(
    (f) => SCHEDULE_FIELDS.has(f as UpdatableField) && wanted[f as UpdatableField] !== undefined,
  );
  if (touchesSchedule && (!ctx.temporal || ctx.taskQueue === undefined)) {
    throw new Error(
      'updateSource: a change of the schedule, timezone or enabled needs ctx.temporal and ctx.taskQueue (its Temporal Schedule follows it)',
    );
  }
  const sync: Omit<SyncContext, 'prisma'> | undefined =
    touchesSchedule && ctx.temporal && ctx.taskQueue !== undefined
      ? { temporal: await ctx.temporal(), taskQueue: ctx.taskQueue, maxFutureDays: ctx.maxFutureDays ?? 0 }
      : undefined;
  let synced = false;
  try {
    return await changeLiveSource(
      ctx,
      id,
      async (tx, current) => {
        const diff = diffSource<UpdatableField>(current, wanted);
        const none = { scheduleId: null, schedule: null };
        if (diff.changed.length === 0) return { source: current, ...diff, ...none };
        const source = await writeSourceUpdate(tx, id, diff, { actor, reason });
        if (!sync || !diff.changed.some((f) => SCHEDULE_FIELDS.has(f))) return { source, ...diff, ...none };
        synced = true;
        // Through the transaction: the schedule follows the row as it is about to commit, and a
        // refusal rolls the row back.
        const change = await syncSourceSchedule({ ...sync, prisma: tx }, id);
        return {
          source,
          ...diff,
          scheduleId: change?.scheduleId ?? scheduleIdFor(sync.taskQueue, source),
          schedule: change?.change ?? null,
        };
      },
      // The schedule's Temporal calls happen inside it.
      { timeout: 30_000 },
    );
  } catch (err) {
    if (!sync || !synced) throw err;
    // The row did not commit: its schedule goes back to the committed one.
    const left = outOfLine(await resyncSchedules({ ...sync, prisma: ctx.prisma }, [id]));
    if (!left) throw err;
    if (isUserFacingError(err)) throw new UserFacingError(`${err.message}${left}`, err.code, { cause: err });
    throw new Error(`updating source '${id}' failed: ${oneLine(errorMessage(err))}${left}`, { cause: err });
  }
}
