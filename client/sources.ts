/**
 * Sources for operators (issue #7, R11 "pause consumption", "fix the input"): reading `source` rows,
 * pausing and resuming a source, and correcting its configuration. Every change is recorded in
 * `audit_entry` (who, when, why) in the same transaction as the change it made.
 *
 * Pausing a source stops it everywhere: its Temporal Schedule is paused, new starts are refused
 * (`prepareFetch`, `enqueueFetch`), a run already queued waits before its first page, and a running
 * run waits at its next page boundary (workflows/fetch-records.ts reads the pause in each page's
 * transaction). Resuming clears the pause, unpauses the schedule and signals the waiting runs.
 *
 * Be very careful: the database is the system of record of a pause. It is written first; the
 * schedule and the signals follow, and a run that missed a signal still sees the pause lifted at
 * its next periodic check.
 */
import { type Client, ScheduleNotFoundError, WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import type { AuditEntry, Prisma, PrismaClient, Source } from '../prisma/generated/client.ts';
import { isSecretRef } from '../worker/activity-deps.ts';
import { errorMessage, UserFacingError } from '../worker/errors.ts';
import { redactUrl } from '../worker/redact.ts';
import { isSourceId } from '../workflows/business-key.ts';
import { isPartnerPreset, PARTNER_PRESETS } from '../workflows/retry-presets.ts';
import { SOURCE_RESUMED_SIGNAL } from '../workflows/types.ts';
import { checkActor, checkText } from './audit.ts';
import { MAX_NOTE_LENGTH } from './compensations.ts';
import { scheduleIdFor, sourceScheduleSchema } from './schedules.ts';
import { MAX_PAGE_SIZE } from './start-fetch.ts';
import { recordAudit } from '../db/audit.ts';

export type { Source };

/** `target_type` of the audit entries about a source. */
export const SOURCE_TARGET = 'source';

/** Longest source name kept. */
export const MAX_NAME_LENGTH = 200;

type PrismaCtx = { prisma: PrismaClient };
type TemporalCtx = PrismaCtx & { temporal: Client; taskQueue: string };

/** A source with its most recent audit entries (oldest first) and how many of its runs are running. */
export type SourceDetail = Source & { audit: AuditEntry[]; runningRuns: number };

/** Sources, by id. Read-only. */
export async function listSources(ctx: PrismaCtx): Promise<Source[]> {
  return ctx.prisma.source.findMany({ orderBy: { id: 'asc' } });
}

/**
 * One source with its last `auditLimit` (default 20) audit entries and the number of its running
 * runs; undefined when there is none. Read-only.
 */
export async function getSource(
  ctx: PrismaCtx,
  id: string,
  opts: { auditLimit?: number } = {},
): Promise<SourceDetail | undefined> {
  if (!isSourceId(id)) return undefined;
  const source = await ctx.prisma.source.findUnique({ where: { id } });
  if (!source) return undefined;
  const [recent, runningRuns] = await Promise.all([
    ctx.prisma.auditEntry.findMany({
      where: { targetType: SOURCE_TARGET, targetId: id },
      orderBy: [{ at: 'desc' }, { id: 'desc' }],
      take: Math.min(Math.max(opts.auditLimit ?? 20, 1), 1000),
    }),
    countRunning(ctx, id),
  ]);
  return { ...source, audit: recent.reverse(), runningRuns };
}

/** One line describing a source's `schedule` column: `cron 0 2 * * *`, `every 1h`, `none`, `invalid`. */
export function scheduleSummary(schedule: unknown): string {
  if (schedule === null || schedule === undefined) return 'none';
  const parsed = sourceScheduleSchema.safeParse(schedule);
  if (!parsed.success) return 'invalid';
  const s = parsed.data;
  if (s.every !== undefined) return `every ${s.every}`;
  return `cron ${Array.isArray(s.cron) ? s.cron.join(' | ') : (s.cron ?? '')}`;
}

/** `paused since <iso> by <who> (<reason>)`, on one line. */
export function pauseText(source: Pick<Source, 'pausedAt' | 'pausedBy' | 'pausedReason'>): string {
  if (!source.pausedAt) return 'not paused';
  const by = source.pausedBy ? ` by ${oneLine(source.pausedBy)}` : '';
  const why = source.pausedReason ? ` (${oneLine(source.pausedReason)})` : '';
  return `paused since ${source.pausedAt.toISOString()}${by}${why}`;
}

/** Free text shown inside a one-line message. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function checkReason(reason: string): string {
  return checkText(reason, 'the reason (--reason)', MAX_NOTE_LENGTH);
}

/** @throws UserFacingError NOT_FOUND naming some known sources. */
async function notFound(ctx: PrismaCtx, id: string): Promise<UserFacingError> {
  const known = await ctx.prisma.source.findMany({ select: { id: true }, orderBy: { id: 'asc' }, take: 20 });
  const list = known.map((s) => s.id).join(', ') || 'none';
  return new UserFacingError(`no source '${id}' (known sources: ${list})`, 'NOT_FOUND');
}

/** The source row, locked for the rest of the transaction; undefined when there is none. */
async function lockSource(tx: Prisma.TransactionClient, id: string): Promise<Source | undefined> {
  const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM source WHERE id = ${id} FOR UPDATE`;
  if (locked.length === 0) return undefined;
  return tx.source.findUniqueOrThrow({ where: { id } });
}

async function countRunning(ctx: PrismaCtx, sourceId: string): Promise<number> {
  return ctx.prisma.fetchRun.count({ where: { sourceId, status: 'running' } });
}

export interface PauseOptions {
  /** Why (1..1000 characters): kept on the source, on its schedule and in the audit trail. */
  reason: string;
  /** Who. */
  actor: string;
}

export interface PausedSource {
  source: Source;
  /** `<taskQueue>/fetch-records/<sourceId>` */
  scheduleId: string;
  /** True when the source has a Temporal Schedule (on this task queue) and it is now paused. */
  schedulePaused: boolean;
  /** Runs of the source in status `running`: each stops at its next page boundary and waits. */
  runningRuns: number;
}

/**
 * Pauses a source: sets `paused_at/paused_reason/paused_by` and writes the audit entry
 * `source.pause` in one transaction (only when it is not paused already), then pauses its Temporal
 * Schedule, if it has one. From then on new starts of the source are refused, and its running runs
 * stop at their next page boundary and wait, durably, until it is resumed (or they are cancelled).
 * @throws UserFacingError NOT_FOUND, ALREADY_PAUSED (nothing is changed), INVALID_INPUT (empty or
 *   too long reason or actor), SCHEDULE_PAUSE_FAILED (the source is paused, its schedule is not).
 */
export async function pauseSource(
  ctx: TemporalCtx,
  id: string,
  options: PauseOptions,
): Promise<PausedSource> {
  const reason = checkReason(options.reason);
  const actor = checkActor(options.actor);
  if (!isSourceId(id)) throw await notFound(ctx, id);
  const scheduleId = scheduleIdFor(ctx.taskQueue, id);
  const outcome = await ctx.prisma.$transaction(async (tx) => {
    const current = await lockSource(tx, id);
    if (!current) return { kind: 'missing' as const };
    if (current.pausedAt) return { kind: 'paused' as const, current };
    const pausedAt = new Date();
    const n = await tx.source.updateMany({
      where: { id, pausedAt: null },
      data: { pausedAt, pausedReason: reason, pausedBy: actor },
    });
    if (n.count !== 1) return { kind: 'paused' as const, current };
    await recordAudit(tx, {
      actor,
      action: 'source.pause',
      targetType: SOURCE_TARGET,
      targetId: id,
      reason,
      details: { pausedAt: pausedAt.toISOString(), scheduleId },
    });
    return { kind: 'done' as const, source: await tx.source.findUniqueOrThrow({ where: { id } }) };
  });
  if (outcome.kind === 'missing') throw await notFound(ctx, id);
  if (outcome.kind === 'paused') {
    throw new UserFacingError(`source '${id}' is already ${pauseText(outcome.current)}`, 'ALREADY_PAUSED');
  }
  let schedulePaused: boolean;
  try {
    await ctx.temporal.schedule.getHandle(scheduleId).pause(`paused with source ${id}: ${reason}`);
    schedulePaused = true;
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) {
      throw new UserFacingError(
        `source '${id}' is paused (new and running runs wait), but its schedule ${scheduleId} could not be paused: ${oneLine(errorMessage(err))}; pause it with \`durable-fetch schedules pause ${id} --reason …\``,
        'SCHEDULE_PAUSE_FAILED',
        { cause: err },
      );
    }
    schedulePaused = false;
  }
  return { source: outcome.source, scheduleId, schedulePaused, runningRuns: await countRunning(ctx, id) };
}

export interface ResumeOptions {
  /** Who. */
  actor: string;
  /** Why (kept in the audit trail). */
  reason?: string;
}

export interface ResumedSource {
  source: Source;
  scheduleId: string;
  /** True when the source's schedule was paused and is now unpaused. */
  scheduleResumed: boolean;
  /** Runs of the source in status `running` (waiting, or about to notice the pause was lifted). */
  runningRuns: number;
  /** Of those, how many workflows received the resume signal (the rest had ended meanwhile). */
  signalled: number;
  /** The pause that was lifted. */
  was: { pausedAt: Date; pausedBy: string | null; pausedReason: string | null };
}

/**
 * Resumes a paused source: clears the pause and writes the audit entry `source.resume` in one
 * transaction, unpauses its schedule (when it has one and it is paused), and signals
 * `sourceResumed` to the workflow of each of its running runs, so that those waiting at a page
 * boundary go on at once (a run that misses the signal sees the pause lifted at its next check).
 * @throws UserFacingError NOT_FOUND, NOT_PAUSED (nothing is changed), INVALID_INPUT,
 *   SCHEDULE_RESUME_FAILED (the source is resumed, its schedule is still paused).
 */
export async function resumeSource(
  ctx: TemporalCtx,
  id: string,
  options: ResumeOptions,
): Promise<ResumedSource> {
  const actor = checkActor(options.actor);
  const reason = options.reason === undefined ? null : checkReason(options.reason);
  if (!isSourceId(id)) throw await notFound(ctx, id);
  const scheduleId = scheduleIdFor(ctx.taskQueue, id);
  const outcome = await ctx.prisma.$transaction(async (tx) => {
    const current = await lockSource(tx, id);
    if (!current) return { kind: 'missing' as const };
    const { pausedAt, pausedBy, pausedReason } = current;
    if (!pausedAt) return { kind: 'not-paused' as const };
    const n = await tx.source.updateMany({
      where: { id, pausedAt: { not: null } },
      data: { pausedAt: null, pausedReason: null, pausedBy: null },
    });
    if (n.count !== 1) return { kind: 'not-paused' as const };
    await recordAudit(tx, {
      actor,
      action: 'source.resume',
      targetType: SOURCE_TARGET,
      targetId: id,
      reason,
      details: { pausedAt: pausedAt.toISOString(), pausedBy, pausedReason },
    });
    return {
      kind: 'done' as const,
      source: await tx.source.findUniqueOrThrow({ where: { id } }),
      was: { pausedAt, pausedBy, pausedReason },
    };
  });
  if (outcome.kind === 'missing') throw await notFound(ctx, id);
  if (outcome.kind === 'not-paused') throw new UserFacingError(`source '${id}' is not paused`, 'NOT_PAUSED');

  let scheduleResumed = false;
  const handle = ctx.temporal.schedule.getHandle(scheduleId);
  try {
    const description = await handle.describe();
    if (description.state.paused) {
      await handle.unpause(`resumed with source ${id}${reason ? `: ${reason}` : ''}`);
      scheduleResumed = true;
    }
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) {
      throw new UserFacingError(
        `source '${id}' is resumed (its runs go on), but its schedule ${scheduleId} could not be unpaused: ${oneLine(errorMessage(err))}; resume it with \`durable-fetch schedules resume ${id}\``,
        'SCHEDULE_RESUME_FAILED',
        { cause: err },
      );
    }
  }

  const running = await ctx.prisma.fetchRun.findMany({
    where: { sourceId: id, status: 'running' },
    select: { workflowId: true },
  });
  let signalled = 0;
  for (const { workflowId } of running) {
    try {
      // The current execution of the business key (continue-as-new changes the run id).
      await ctx.temporal.workflow.getHandle(workflowId).signal(SOURCE_RESUMED_SIGNAL);
      signalled++;
    } catch (err) {
      // Ended meanwhile: nothing waits for the signal.
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }
  return {
    source: outcome.source,
    scheduleId,
    scheduleResumed,
    runningRuns: running.length,
    signalled,
    was: outcome.was,
  };
}

/** What `updateSource` may change. `credentialsRef: null` clears the reference. */
export interface SourceChanges {
  name?: string;
  baseUrl?: string;
  pageSize?: number;
  retryPolicy?: string;
  credentialsRef?: string | null;
  timezone?: string;
  enabled?: boolean;
  submitSummary?: boolean;
  submitMaxProcessingMs?: number;
}

export type SourceField = keyof SourceChanges;

/** The CLI option of each field, for messages. */
export const FIELD_OPTIONS: Record<SourceField, string> = {
  name: '--name',
  baseUrl: '--base-url',
  pageSize: '--page-size',
  retryPolicy: '--retry-policy',
  credentialsRef: '--credentials-ref',
  timezone: '--timezone',
  enabled: '--enable/--disable',
  submitSummary: '--submit-summary',
  submitMaxProcessingMs: '--submit-max-processing',
};

/** Longest declared processing time of a partner's submissions: a day. */
export const MAX_SUBMIT_PROCESSING_MS = 86_400_000;

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** True when the URL carries credentials (`user:password@`), which belong in a DF_SECRET_* variable. */
function hasUserInfo(value: string): boolean {
  try {
    const url = new URL(value);
    return url.username !== '' || url.password !== '';
  } catch {
    return false;
  }
}

const changesSchema = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1, `must be 1..${MAX_NAME_LENGTH} characters`)
    .max(MAX_NAME_LENGTH, `must be 1..${MAX_NAME_LENGTH} characters`)
    .optional(),
  baseUrl: z
    .string()
    .trim()
    .refine(isHttpUrl, 'expected an http or https URL')
    // Userinfo, or a secret-looking query parameter (?token=, ?api_key=…): what redactUrl masks.
    .refine((v) => !hasUserInfo(v) && redactUrl(v) === v, {
      message:
        'must not carry credentials: put the secret in a DF_SECRET_* variable and set --credentials-ref',
      abort: true,
    })
    .optional(),
  pageSize: z
    .number({ error: `expected an integer 1..${MAX_PAGE_SIZE}` })
    .int(`expected an integer 1..${MAX_PAGE_SIZE}`)
    .min(1, `expected an integer 1..${MAX_PAGE_SIZE}`)
    .max(MAX_PAGE_SIZE, `expected an integer 1..${MAX_PAGE_SIZE}`)
    .optional(),
  retryPolicy: z
    .string()
    .refine(isPartnerPreset, `expected one of ${PARTNER_PRESETS.join(', ')}`)
    .optional(),
  credentialsRef: z
    .string()
    .refine(isSecretRef, 'expected the NAME of a DF_SECRET_* variable (A-Z, 0-9, _), not a secret')
    .nullable()
    .optional(),
  timezone: z.string().refine(isTimeZone, 'expected an IANA timezone such as Europe/Paris or UTC').optional(),
  enabled: z.boolean().optional(),
  submitSummary: z.boolean().optional(),
  submitMaxProcessingMs: z
    .number({ error: `expected milliseconds 0..${MAX_SUBMIT_PROCESSING_MS}` })
    .int(`expected milliseconds 0..${MAX_SUBMIT_PROCESSING_MS}`)
    .min(0, `expected milliseconds 0..${MAX_SUBMIT_PROCESSING_MS}`)
    .max(MAX_SUBMIT_PROCESSING_MS, `expected milliseconds 0..${MAX_SUBMIT_PROCESSING_MS}`)
    .optional(),
});

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

/**
 * Validates `changes` (all of them, before anything is written), then updates the source and
 * writes the audit entry `source.update` with `{ before, after }` of the fields that really
 * changed, in one transaction. Values that are already so change nothing (and are not audited);
 * when none changes, nothing is written. Never takes secret values: `credentialsRef` names a
 * DF_SECRET_* variable, and a base URL with credentials in it is refused.
 * @throws UserFacingError NOT_FOUND, INVALID_INPUT naming every invalid value (nothing is
 *   changed), NO_CHANGES (no change given).
 */
export async function updateSource(
  ctx: PrismaCtx,
  id: string,
  changes: SourceChanges,
  options: UpdateOptions,
): Promise<UpdatedSource> {
  const reason = checkReason(options.reason);
  const actor = checkActor(options.actor);
  const given = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
  if (Object.keys(given).length === 0) {
    throw new UserFacingError(
      `nothing to update: give at least one of ${Object.values(FIELD_OPTIONS).join(', ')}`,
      'NO_CHANGES',
    );
  }
  const parsed = changesSchema.safeParse(given);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => {
      const field = i.path[0];
      const option =
        typeof field === 'string' && field in FIELD_OPTIONS
          ? FIELD_OPTIONS[field as SourceField]
          : String(field ?? '');
      return option ? `${option}: ${i.message}` : i.message;
    });
    throw new UserFacingError(`invalid update of source '${id}': ${issues.join('; ')}`, 'INVALID_INPUT');
  }
  const wanted = parsed.data;
  if (!isSourceId(id)) throw await notFound(ctx, id);
  const outcome = await ctx.prisma.$transaction(async (tx) => {
    const current = await lockSource(tx, id);
    if (!current) return undefined;
    const before: Partial<Record<SourceField, unknown>> = {};
    const after: Partial<Record<SourceField, unknown>> = {};
    const changed: SourceField[] = [];
    for (const field of Object.keys(FIELD_OPTIONS) as SourceField[]) {
      const value = wanted[field];
      if (value === undefined || value === current[field]) continue;
      changed.push(field);
      before[field] = current[field];
      after[field] = value;
    }
    if (changed.length === 0) return { source: current, changed, before, after };
    const source = await tx.source.update({ where: { id }, data: after as Prisma.SourceUpdateInput });
    await recordAudit(tx, {
      actor,
      action: 'source.update',
      targetType: SOURCE_TARGET,
      targetId: id,
      reason,
      details: { before, after } as Prisma.InputJsonObject,
    });
    return { source, changed, before, after };
  });
  if (!outcome) throw await notFound(ctx, id);
  return outcome;
}
