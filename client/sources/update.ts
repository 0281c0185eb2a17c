/** Correcting a source's configuration (R11 "fix the input"), audited with before and after. */
import type { JobRegistry } from '../../activities/job-api/registry.ts';
import { recordAudit } from '../../db/audit.ts';
import type { Prisma, Source } from '../../prisma/generated/client.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import { defaultJobs } from '../../worker/jobs.ts';
import { isSourceId } from '../../workflows/business-key.ts';
import { checkActor } from '../audit.ts';
import { checkReason, lockSource, notFound, type PrismaCtx, removedError, SOURCE_TARGET } from './common.ts';
import {
  canonicalJson,
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

export interface UpdatedSource {
  source: Source;
  /** The fields whose value changed, in a fixed order; empty when every value was already so. */
  changed: SourceField[];
  before: Partial<Record<SourceField, unknown>>;
  after: Partial<Record<SourceField, unknown>>;
}

const same = (a: unknown, b: unknown) => a === b || canonicalJson(a) === canonicalJson(b);

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
  const outcome = await ctx.prisma.$transaction(async (tx) => {
    const current = await lockSource(tx, id);
    if (!current) return undefined;
    if (current.removedAt) return { kind: 'removed' as const, current };
    const before: Partial<Record<SourceField, unknown>> = {};
    const after: Partial<Record<SourceField, unknown>> = {};
    const changed: SourceField[] = [];
    for (const field of Object.keys(FIELD_OPTIONS) as SourceField[]) {
      const value = wanted[field];
      if (value === undefined || same(value, current[field])) continue;
      changed.push(field);
      before[field] = current[field];
      after[field] = value;
    }
    if (changed.length === 0) return { kind: 'done' as const, source: current, changed, before, after };
    const source = await tx.source.update({ where: { id }, data: after as Prisma.SourceUpdateInput });
    await recordAudit(tx, {
      actor,
      action: 'source.update',
      targetType: SOURCE_TARGET,
      targetId: id,
      reason,
      details: { before, after } as Prisma.InputJsonObject,
    });
    return { kind: 'done' as const, source, changed, before, after };
  });
  if (!outcome) throw await notFound(ctx, id);
  if (outcome.kind === 'removed') throw removedError(outcome.current);
  const { source, changed, before, after } = outcome;
  return { source, changed, before, after };
}
