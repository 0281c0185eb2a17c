/**
 * The `downstreams` half of `sources apply` (R8): when a file lists downstreams, the `downstream`
 * table is made to match it — rows created, updated (only the settings that differ) or removed
 * (back to the defaults) — in the same transaction as the sources, each change audited with its
 * before and after. A change of a downstream's task queue under live runs is refused: those runs
 * were routed to the queue they were claimed with.
 */
import { recordAudit } from '../../db/audit.ts';
import {
  defaultSettings,
  type DownstreamSettings,
  readDownstreamRows,
  rowOf,
} from '../../db/ledger/downstreams.ts';
import { LIVE_RUN_STATUSES } from '../../contract/states.ts';
import type { Prisma } from '../../prisma/generated/client.ts';
import { canonicalJson } from './canonical-json.ts';
import type { PlanAction, PlannedChange } from './plan.ts';

/** One downstream's step: the planned change and what it needs. */
export type DownstreamStep = PlannedChange & {
  action: Exclude<PlanAction, 'refused'>;
  before?: DownstreamSettings;
  after?: DownstreamSettings;
};

type Row = ReturnType<typeof rowOf>;

/** The settings of `after` that differ from `before`, by column name. */
function changedSettings(before: DownstreamSettings, after: DownstreamSettings): string[] {
  const b = rowOf(before) as Record<string, unknown>;
  const a = rowOf(after) as Record<string, unknown>;
  return (Object.keys(a) as (keyof Row)[]).filter((k) => canonicalJson(a[k]) !== canonicalJson(b[k]));
}

/** Live runs of the sources on downstream `id`. */
async function liveRuns(db: Prisma.TransactionClient, id: string): Promise<number> {
  return db.fetchRun.count({
    where: { status: { in: [...LIVE_RUN_STATUSES] }, source: { downstream: id } },
  });
}

/**
 * The steps of making the table match `wanted` (the file's list, in file order, then the rows it
 * leaves out, by id), or the problems that refuse the file. With `lock`, the rows are locked
 * first. Writes nothing.
 */
export async function planDownstreams(
  db: Prisma.TransactionClient,
  file: string,
  wanted: readonly DownstreamSettings[] | undefined,
  opts: { lock: boolean },
): Promise<{ steps: DownstreamStep[]; problems: string[] }> {
  if (wanted === undefined) return { steps: [], problems: [] };
  const rows = new Map((await readDownstreamRows(db, opts)).map((s) => [s.id, s]));
  const steps: DownstreamStep[] = [];
  const problems: string[] = [];
  const queueChange = async (at: string, id: string, what: string) => {
    const live = await liveRuns(db, id);
    if (live > 0) {
      problems.push(
        `${file}: ${at}: ${what} downstream '${id}' moves its partner calls to another task queue, ` +
          `and ${live} live run(s) of its sources use the one they were claimed with: let them finish ` +
          '(or pause its sources) first',
      );
    }
  };
  for (const [i, after] of wanted.entries()) {
    const before = rows.get(after.id);
    if (!before) {
      if (after.isolated) await queueChange(`downstreams[${i}].isolated`, after.id, 'isolating');
      steps.push({
        id: after.id,
        action: 'create',
        fields: changedSettings(defaultSettings(after.id), after),
        after,
      });
      continue;
    }
    const fields = changedSettings(before, after);
    if (before.isolated !== after.isolated)
      await queueChange(
        `downstreams[${i}].isolated`,
        after.id,
        after.isolated ? 'isolating' : 'un-isolating',
      );
    steps.push(
      fields.length === 0
        ? { id: after.id, action: 'unchanged', fields: [] }
        : { id: after.id, action: 'update', fields, before, after },
    );
  }
  const listed = new Set(wanted.map((d) => d.id));
  for (const [id, before] of [...rows].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (listed.has(id)) continue;
    if (before.isolated) await queueChange('downstreams', id, 'leaving out isolated');
    steps.push({ id, action: 'remove', fields: [], before });
  }
  return { steps, problems };
}

/** Carries out `step` through `tx`, with its audit entry (`downstream.set`, `downstream.remove`). */
export async function writeDownstream(
  tx: Prisma.TransactionClient,
  step: DownstreamStep,
  audit: { actor: string; reason: string },
): Promise<void> {
  const entry = { actor: audit.actor, reason: audit.reason, targetType: 'downstream', targetId: step.id };
  const json = (s: DownstreamSettings | undefined) =>
    s === undefined ? null : (s as unknown as Prisma.InputJsonObject);
  switch (step.action) {
    case 'create':
    case 'update': {
      const data = rowOf(step.after as DownstreamSettings);
      await tx.downstream.upsert({ where: { id: step.id }, create: { id: step.id, ...data }, update: data });
      await recordAudit(tx, {
        ...entry,
        action: 'downstream.set',
        details: { fields: step.fields, before: json(step.before), after: json(step.after) },
      });
      return;
    }
    case 'remove':
      await tx.downstream.delete({ where: { id: step.id } });
      await recordAudit(tx, {
        ...entry,
        action: 'downstream.remove',
        details: { before: json(step.before) },
      });
      return;
    case 'unchanged':
      return;
  }
}
