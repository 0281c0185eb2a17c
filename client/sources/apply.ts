/**
 * `sources apply`: makes the `source` table (and, when the file lists them, the `downstream`
 * table: apply-downstreams.ts) match a sources file. Every change goes through the
 * code of the command that makes it by hand (`sources add`, `update`, `remove`: the same rows, the
 * same audit entries), all of them in one transaction, and the schedules of the sources it
 * touched are synced before that transaction commits, as `sources add` does: a schedule Temporal
 * refuses leaves nothing changed (the schedules already synced are put back as they were).
 */
import type { Client } from '@temporalio/client';
import { codeOf } from '../../activities/errors.ts';
import type { JobRegistry } from '../../activities/job-api/registry.ts';
import type { Prisma } from '../../prisma/generated/client.ts';
import { errorMessage, isUserFacingError, UserFacingError } from '../../runtime/errors.ts';
import { defaultJobs } from '../../jobs/registry.ts';
import { checkActor } from '../audit.ts';
import { scheduleIdFor } from '../schedule-spec.ts';
import { outOfLine, resyncSchedules, type SyncChange, syncSourceSchedule } from '../schedules.ts';
import { insertSource, newSourceData } from './add.ts';
import { checkReason, oneLine, type PrismaCtx } from './common.ts';
import { fileProblemsError, readSourcesFile, type SourcesFile } from './file.ts';
import { type Plan, type PlanAction, type PlannedChange, planSources, type PlanStep } from './plan.ts';
import { markRemoved } from './remove.ts';
import { type DownstreamStep, planDownstreams, writeDownstream } from './apply-downstreams.ts';
import { type AppliedQueueConfig, applyDownstreamQueueConfig } from '../downstream-queues.ts';
import { writeSourceUpdate } from './update.ts';

export interface ApplyContext extends PrismaCtx {
  /** Temporal, connected on first use (a dry run never uses it). */
  temporal: () => Promise<Client>;
  taskQueue: string;
  /** The jobs sources may run (default: the deployment's, jobs/registry.ts). */
  jobs?: JobRegistry;
  /** The future-date policy (DURABLE_FETCH_MAX_FUTURE_DAYS). Default 0. */
  maxFutureDays?: number;
}

export interface ApplyOptions {
  /** Who. */
  actor: string;
  /** Why (1..1000 characters; audited). Default: `sources apply -f <file>`. */
  reason?: string;
  /** Also remove the live sources the file leaves out. */
  prune?: boolean;
  /** Only plan: no database write, no Temporal call. */
  dryRun?: boolean;
}

export interface ApplyReport {
  file: string;
  dryRun: boolean;
  /** One per source of the file (file order), then one per pruned source. */
  changes: PlannedChange[];
  /** How many of each action. */
  counts: Record<PlanAction, number>;
  /** What happened to the schedules of the sources it created, updated or removed (none in a dry run). */
  schedules: SyncChange[];
  /** One per downstream of the file (file order), then one per row it leaves out; none when it lists none. */
  downstreams: PlannedChange[];
  /**
   * Temporal's limits of each isolated downstream of the file, applied once the rows committed
   * (none in a dry run). A refusal does not undo the rows: the workers apply them again.
   */
  queues: AppliedQueueConfig[];
}

const TOUCHES: ReadonlySet<PlanAction> = new Set(['create', 'update', 'remove']);

function reportOf(
  file: SourcesFile,
  plan: Plan,
  downstreams: readonly DownstreamStep[],
  dryRun: boolean,
  schedules: SyncChange[],
): ApplyReport {
  const counts: Record<PlanAction, number> = { create: 0, update: 0, unchanged: 0, remove: 0, refused: 0 };
  const changes = plan.steps.map(({ id, action, fields, problem }) => {
    counts[action]++;
    return { id, action, fields, ...(problem === undefined ? {} : { problem }) };
  });
  const lines = downstreams.map(({ id, action, fields }) => ({ id, action, fields }));
  return { file: file.file, dryRun, changes, counts, schedules, downstreams: lines, queues: [] };
}

async function write(
  tx: Prisma.TransactionClient,
  ctx: ApplyContext,
  step: PlanStep,
  audit: { actor: string; reason: string },
): Promise<void> {
  switch (step.action) {
    case 'create': {
      const data = newSourceData(step.desired.input, step.desired.checked);
      const scheduleId =
        data.schedule === undefined
          ? null
          : scheduleIdFor(ctx.taskQueue, { id: step.id, jobType: step.desired.input.jobType });
      await insertSource(tx, data, { ...audit, scheduleId });
      return;
    }
    case 'update':
      await writeSourceUpdate(tx, step.id, step.diff, audit);
      return;
    case 'remove':
      await markRemoved(tx, step.current, {
        ...audit,
        scheduleId: scheduleIdFor(ctx.taskQueue, step.current),
      });
      return;
    case 'unchanged':
    case 'refused':
      return;
  }
}

/**
 * Applies the checked sources file `file`: plans it against the table (plan.ts), then in one
 * transaction creates (audit `source.add`), updates (`source.update` with before/after of the
 * fields that differ) and, with `prune`, removes (`source.remove`) sources, and syncs the
 * schedules of those before committing. Sources already as the file says are left alone, so a
 * second apply writes nothing. A pruned source with open runs or unsettled actions is `refused`
 * in the report while the rest applies. Once committed, the Temporal limits of the file's isolated
 * downstreams are applied (`queues`; a refusal is reported, the workers apply them again). With
 * `dryRun`, only the plan: nothing is written or called.
 * @throws UserFacingError INVALID_INPUT (the file changes a job type or reuses a removed id, or
 *   lists no sources with `prune`;
 *   nothing is changed), SOURCE_EXISTS (added meanwhile by someone else), INVALID_SCHEDULE
 *   (Temporal refused a schedule; nothing is changed).
 */
export async function applySources(
  ctx: ApplyContext,
  file: SourcesFile,
  options: ApplyOptions,
): Promise<ApplyReport> {
  const actor = checkActor(options.actor);
  const reason = checkReason(options.reason ?? `sources apply -f ${file.file}`);
  const prune = options.prune === true;
  if (prune && file.sources.length === 0) {
    // Almost surely a file emptied by mistake: pruning against it would remove every source.
    throw new UserFacingError(
      `${file.file} lists no sources: --prune would remove every source; nothing was changed`,
      'INVALID_INPUT',
    );
  }
  if (options.dryRun) {
    const plan = await planSources(ctx.prisma, file, { prune, lock: false });
    const ds = await planDownstreams(ctx.prisma, file.file, file.downstreams, { lock: false });
    const problems = [...plan.problems, ...ds.problems];
    if (problems.length > 0) throw fileProblemsError(file.file, problems, 'nothing would change');
    return reportOf(file, plan, ds.steps, true, []);
  }
  const temporal = await ctx.temporal();
  const synced: string[] = [];
  let report: ApplyReport;
  try {
    report = await ctx.prisma.$transaction(
      async (tx) => {
        const plan = await planSources(tx, file, { prune, lock: true });
        const ds = await planDownstreams(tx, file.file, file.downstreams, { lock: true });
        const problems = [...plan.problems, ...ds.problems];
        if (problems.length > 0) throw fileProblemsError(file.file, problems, 'nothing was changed');
        for (const step of ds.steps) await writeDownstream(tx, step, { actor, reason });
        for (const step of plan.steps) await write(tx, ctx, step, { actor, reason });
        const schedules: SyncChange[] = [];
        for (const step of plan.steps.filter((s) => TOUCHES.has(s.action))) {
          synced.push(step.id);
          // Through the transaction: the schedule follows the rows as they are about to commit.
          const change = await syncSourceSchedule({ ...ctx, temporal, prisma: tx }, step.id);
          if (change) schedules.push(change);
        }
        return reportOf(file, plan, ds.steps, false, schedules);
      },
      // Each source may wait on its schedule's Temporal calls.
      { timeout: 30_000 + 1_000 * file.sources.length },
    );
  } catch (err) {
    const failed = synced.length > 0 ? await resyncSchedules({ ...ctx, temporal }, synced) : [];
    const left = outOfLine(failed);
    if (codeOf(err) === 'P2002') {
      throw new UserFacingError(
        `a source of ${file.file} was added meanwhile by someone else: nothing was changed, apply again${left}`,
        'SOURCE_EXISTS',
        { cause: err },
      );
    }
    if (!left) throw err;
    if (isUserFacingError(err)) throw new UserFacingError(`${err.message}${left}`, err.code, { cause: err });
    // A bug: still one, with what it left behind said.
    throw new Error(`applying ${file.file} failed: ${oneLine(errorMessage(err))}${left}`, { cause: err });
  }
  const isolated = (file.downstreams ?? []).filter((d) => d.isolated);
  if (isolated.length === 0) return report;
  // Temporal keeps who set a limit and why: the command, not the operator or their words (those
  // are in the audit trail, under the project's retention).
  const queues = await applyDownstreamQueueConfig(
    temporal,
    temporal.options.namespace,
    ctx.taskQueue,
    isolated,
    {
      reason: 'durable-fetch sources apply',
      identity: 'durable-fetch sources apply',
    },
  );
  return { ...report, queues };
}

/**
 * Reads, checks and applies the sources file at `path` (see {@link applySources}); what `npm start`
 * and other code use to apply a file.
 * @throws UserFacingError INVALID_INPUT listing every problem of the file, one per line (nothing is
 *   changed), and those of {@link applySources}.
 */
export async function applySourcesFile(
  ctx: ApplyContext,
  path: string,
  options: ApplyOptions,
): Promise<ApplyReport> {
  const jobs = ctx.jobs ?? defaultJobs();
  const read = await readSourcesFile(path, { jobs, maxFutureDays: ctx.maxFutureDays ?? 0 });
  if (!read.ok) {
    throw fileProblemsError(
      path,
      read.problems,
      options.dryRun ? 'nothing would change' : 'nothing was changed',
    );
  }
  return applySources({ ...ctx, jobs }, read.file, options);
}
