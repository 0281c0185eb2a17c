/**
 * An incremental source's watermark, for operators: read it, and set it back (or forward) or
 * remove it, audited. The watermark says where the next head run's window starts (its value less
 * the source's lookback); a source without one starts from its configured start. Moving it back
 * makes the next run read again what changed since (as upserts); moving it forward skips changes,
 * which is why it takes a reason and leaves an audit entry.
 */
import type { JobRegistry } from '../../activities/job-api/registry.ts';
import {
  type StoredWatermark,
  type WatermarkKind,
  watermarkText,
} from '../../activities/job-api/watermark.ts';
import { recordAudit } from '../../db/audit.ts';
import { findWatermark, setWatermark } from '../../db/pages/watermark.ts';
import { defaultJobs } from '../../jobs/registry.ts';
import type { Source } from '../../prisma/generated/client.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import { checkActor } from '../audit.ts';
import { isSourceId } from '../../contract/business-key.ts';
import { parseJobConfig } from '../../activities/job-api/registry.ts';
import { changeLiveSource, checkReason, notFound, type PrismaCtx, SOURCE_TARGET } from './common.ts';

type WatermarkCtx = PrismaCtx & { jobs?: JobRegistry };

/** A source's incremental settings and its watermark. */
export interface SourceWatermark {
  sourceId: string;
  /** The kind of its cursor; undefined for a source that is not incremental (now). */
  kind: WatermarkKind | undefined;
  /** Where a first window starts. */
  start: string | undefined;
  watermark: StoredWatermark | undefined;
}

/** The incremental spec of `source`'s job and config, if any. */
function specOf(ctx: WatermarkCtx, source: Source) {
  const job = (ctx.jobs ?? defaultJobs()).find(source.jobType);
  if (!job?.watermark) return undefined;
  const parsed = parseJobConfig(job, source.config);
  return parsed.ok ? job.watermark(parsed.config) : undefined;
}

/** The watermark of source `id`. Read-only. @throws UserFacingError NOT_FOUND. */
export async function getWatermark(ctx: WatermarkCtx, id: string): Promise<SourceWatermark> {
  const source = isSourceId(id) ? await ctx.prisma.source.findUnique({ where: { id } }) : null;
  if (!source) throw await notFound(ctx, id);
  const spec = specOf(ctx, source);
  return {
    sourceId: id,
    kind: spec?.kind,
    start: spec?.start,
    watermark: await findWatermark(ctx.prisma, id),
  };
}

export interface SetWatermarkOptions {
  /** The new value (the source's kind: an ISO-8601 instant with its offset, or an integer); undefined removes it. */
  to: string | undefined;
  reason: string;
  actor: string;
}

/**
 * Sets source `id`'s watermark to `to`, or removes it, with the audit entry `source.watermark_set`
 * or `source.watermark_reset` in the same transaction (the source row locked, as every change of
 * a source is). The source's runs whose windows were fixed before keep them, but no longer move
 * the watermark (a running run, a failed one retried later); the next run starts from here.
 * @throws UserFacingError NOT_FOUND, SOURCE_REMOVED, NOT_INCREMENTAL (the source's config has no
 *   incremental part), INVALID_INPUT (a value not of the source's kind, a bad reason or actor).
 */
export async function setSourceWatermark(
  ctx: WatermarkCtx,
  id: string,
  options: SetWatermarkOptions,
): Promise<{ was: StoredWatermark | undefined; now: StoredWatermark | undefined; runsDemoted: number }> {
  const reason = checkReason(options.reason);
  const actor = checkActor(options.actor);
  return changeLiveSource(ctx, id, async (tx, source) => {
    const spec = specOf(ctx, source);
    if (!spec) {
      throw new UserFacingError(
        `source '${id}' is not incremental (its config has no incremental part)`,
        'NOT_INCREMENTAL',
      );
    }
    let to: StoredWatermark | undefined;
    if (options.to !== undefined) {
      const value = watermarkText(spec.kind, options.to);
      if (value === undefined) {
        const expected =
          spec.kind === 'timestamp'
            ? 'an ISO-8601 instant with its offset, e.g. 2026-01-01T00:00:00Z'
            : 'an integer';
        throw new UserFacingError(`--to: expected ${expected}, got '${options.to}'`, 'INVALID_INPUT');
      }
      const current = await findWatermark(tx, id);
      // Its date stays: which runs are the source's head does not change with its value.
      to = { kind: spec.kind, value, businessDate: current?.businessDate ?? '1970-01-01' };
    }
    const { was, demoted } = await setWatermark(tx, id, to);
    await recordAudit(tx, {
      actor,
      action: to === undefined ? 'source.watermark_reset' : 'source.watermark_set',
      targetType: SOURCE_TARGET,
      targetId: id,
      reason,
      details: { was: was?.value ?? null, now: to?.value ?? null, kind: spec.kind, runsDemoted: demoted },
    });
    return { was, now: to, runsDemoted: demoted };
  });
}
