/** Correcting a source's configuration (R11 "fix the input"), audited with before and after. */
import type { JobRegistry } from '../../activities/job-api/registry.ts';
import { recordAudit } from '../../db/audit.ts';
import { Prisma, type Source } from '../../prisma/generated/client.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import { defaultJobs } from '../../jobs/registry.ts';
import { isSourceId } from '../../contract/business-key.ts';
import { checkActor } from '../audit.ts';
import { sourceScheduleSchema } from '../schedule-spec.ts';
import {
  changeLiveSource,
  checkReason,
  notFound,
  type PrismaCtx,
  removedError,
  SOURCE_TARGET,
} from './common.ts';
import { canonicalJson } from './canonical-json.ts';
import {
  checkFields,
  checkJobConfig,
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

export interface UpdatedSource extends SourceDiff<SourceField> {
  source: Source;
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

/**
 * Validates `changes` (all of them, before anything is written; `config` by the source's job's
 * schema, its defaults applied), then updates the source and writes the audit entry
 * `source.update` with `{ before, after }` of the fields that really changed, in one transaction.
 * Values that are already so change nothing (and are not audited); when none changes, nothing is
 * written. Never takes secret values: `credentialsRef` names a DF_SECRET_* variable, and a base
 * URL with credentials in it is refused. The job type of a source never changes.
 * @throws UserFacingError NOT_FOUND, SOURCE_REMOVED, INVALID_INPUT naming every invalid value
 *   (nothing is changed), NO_CHANGES (no change given).
 */
export async function updateSource(
  ctx: PrismaCtx & { jobs?: JobRegistry },
  id: string,
  changes: SourceChanges,
  options: UpdateOptions,
): Promise<UpdatedSource> {
  const reason = checkReason(options.reason);
  const actor = checkActor(options.actor);
  if (Object.values(changes).every((v) => v === undefined)) {
    throw new UserFacingError(
      `nothing to update: give at least one of ${Object.values(FIELD_OPTIONS).join(', ')}`,
      'NO_CHANGES',
    );
  }
  const checked = checkFields(changes);
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
  if (!checked.ok || problems.length > 0) {
    throw new UserFacingError(`invalid update of source '${id}': ${problems.join('; ')}`, 'INVALID_INPUT');
  }
  const wanted: SourceChanges = { ...checked.fields, ...(config === undefined ? {} : { config }) };
  const { source, changed, before, after } = await changeLiveSource(ctx, id, async (tx, current) => {
    const diff = diffSource<SourceField>(current, wanted);
    if (diff.changed.length === 0) return { source: current, ...diff };
    return { source: await writeSourceUpdate(tx, id, diff, { actor, reason }), ...diff };
  });
  return { source, changed, before, after };
}
