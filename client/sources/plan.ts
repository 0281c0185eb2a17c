/**
 * What `sources apply` would do: each source of the file compared with its row — created,
 * updated (only the fields that differ) or unchanged — and, with prune, each live source the file
 * leaves out removed (or refused, as `sources remove` refuses it). A file that would change a
 * job type or reuse a removed id is refused whole: those are problems of the file.
 */
import type { Prisma, Source } from '../../prisma/generated/client.ts';
import { lockSource, removedError } from './common.ts';
import type { DesiredSource, SourcesFile } from './file.ts';
import { SOURCE_DEFAULTS } from './file-schema.ts';
import { busyMessage, busyOf } from './remove.ts';
import { diffSource, type SourceDiff, type UpdatableField } from './update.ts';

export type PlanAction = 'create' | 'update' | 'unchanged' | 'remove' | 'refused';

/** One source's line of the plan. */
export interface PlannedChange {
  id: string;
  action: PlanAction;
  /** create: the settings the file gives; update: those that differ; otherwise none. */
  fields: string[];
  /** refused: why, with what to do (one line). */
  problem?: string;
}

/** A step to carry out: the planned change and what it needs. */
export type PlanStep = PlannedChange &
  (
    | { action: 'create'; desired: DesiredSource }
    | { action: 'update'; diff: SourceDiff }
    | { action: 'remove'; current: Source }
    | { action: 'unchanged' | 'refused' }
  );

export interface Plan {
  /** The file's sources in file order, then the pruned ones by id. */
  steps: PlanStep[];
  /** Problems of the file found against the table (`<file>: <path>: <message>`): then nothing applies. */
  problems: string[];
}

/**
 * Every value the file wants a source to have: what it gives, and for what it leaves out the
 * default a new source would get. Pure.
 */
export function wantedOf(desired: DesiredSource): Record<UpdatableField, unknown> {
  const { input, checked } = desired;
  const f = checked.fields;
  const d = SOURCE_DEFAULTS;
  return {
    name: f.name ?? input.id,
    baseUrl: f.baseUrl,
    pageSize: f.pageSize ?? d.pageSize,
    retryPolicy: f.retryPolicy ?? d.retryPolicy,
    credentialsRef: f.credentialsRef ?? d.credentialsRef,
    timezone: f.timezone ?? d.timezone,
    enabled: f.enabled ?? d.enabled,
    submitSummary: f.submitSummary ?? d.submitSummary,
    submitMaxProcessingMs: f.submitMaxProcessingMs ?? d.submitMaxProcessingMs,
    maxRunTimeMs: f.maxRunTimeMs ?? d.maxRunTimeMs,
    localFetch: f.localFetch ?? d.localFetch,
    config: checked.config,
    downstream: input.downstream ?? d.downstream,
    schedule: input.schedule ?? d.schedule,
  };
}

/** The step of one source of the file, or the problem that refuses the file. */
function stepOf(file: string, desired: DesiredSource, row: Source | undefined): PlanStep | string {
  const { id, jobType } = desired.input;
  if (!row) return { id, action: 'create', fields: desired.keys, desired };
  if (row.removedAt) return `${file}: ${desired.at}.id: ${removedError(row).message}`;
  if (row.jobType !== jobType) {
    return (
      `${file}: ${desired.at}.job: the job type of source '${id}' cannot change from '${row.jobType}' to ` +
      `'${jobType}' (its runs, records and keys belong to its job): add a new source instead`
    );
  }
  const diff = diffSource(row, wantedOf(desired));
  if (diff.changed.length === 0) return { id, action: 'unchanged', fields: [] };
  return { id, action: 'update', fields: diff.changed, diff };
}

/**
 * The plan of applying `file` to the table as `db` sees it. With `lock` (inside the transaction
 * that applies it), every row it touches is locked first, in id order, so that the plan holds
 * until that transaction ends. Writes nothing.
 */
export async function planSources(
  db: Prisma.TransactionClient,
  file: SourcesFile,
  opts: { prune: boolean; lock: boolean },
): Promise<Plan> {
  const ids = file.sources.map((s) => s.input.id);
  const pruned = opts.prune
    ? await db.source.findMany({
        where: { removedAt: null, id: { notIn: ids } },
        select: { id: true },
        orderBy: { id: 'asc' },
      })
    : [];
  const rows = new Map<string, Source>();
  if (opts.lock) {
    for (const id of [...ids, ...pruned.map((p) => p.id)].sort()) {
      const row = await lockSource(db, id);
      if (row) rows.set(id, row);
    }
  } else {
    const all = await db.source.findMany({ where: { id: { in: [...ids, ...pruned.map((p) => p.id)] } } });
    for (const row of all) rows.set(row.id, row);
  }
  const plan: Plan = { steps: [], problems: [] };
  for (const desired of file.sources) {
    const step = stepOf(file.file, desired, rows.get(desired.input.id));
    if (typeof step === 'string') plan.problems.push(step);
    else plan.steps.push(step);
  }
  for (const { id } of pruned) {
    const current = rows.get(id);
    // Removed (or deleted) since it was listed: nothing left to prune.
    if (!current || current.removedAt) continue;
    const busy = await busyOf(db, id);
    if (busy.openRuns > 0 || busy.unsettled > 0) {
      plan.steps.push({ id, action: 'refused', fields: [], problem: busyMessage(id, busy) });
    } else {
      plan.steps.push({ id, action: 'remove', fields: [], current });
    }
  }
  return plan;
}
