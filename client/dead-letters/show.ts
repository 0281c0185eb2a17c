/** `dlq show`: one dead letter with its run, its audit trail and the failed run's attempts. */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { AuditEntry, RunStatus } from '../../prisma/generated/client.ts';
import { errorMessage } from '../../runtime/errors.ts';
import { redactUrlsIn } from '../../runtime/redact.ts';
import { failedExecutionTimeline, type TimelineEntry } from './timeline.ts';
import { DEAD_LETTER_TARGET, type DeadLetterView, isDeadLetterId, type PrismaCtx, view } from './view.ts';

/** One dead letter with its run, its audit trail (oldest first) and the failed run's attempts. */
export type DeadLetterDetail = DeadLetterView & {
  run: {
    id: string;
    status: RunStatus;
    attempt: number;
    pagesStored: number;
    recordsStored: number;
    workflowId: string;
    workflowRunId: string | null;
  };
  audit: AuditEntry[];
  /** Activities of the execution that failed, in the order they were scheduled; undefined when unknown. */
  timeline?: TimelineEntry[];
  /** Temporal run id of that execution (a later one than `workflowRunId` after continue-as-new). */
  timelineRunId?: string;
  /** Why there is no timeline (Temporal unreachable, history gone…). */
  timelineNote?: string;
};

const RUN_SELECT = {
  id: true,
  status: true,
  attempt: true,
  pagesStored: true,
  recordsStored: true,
  workflowId: true,
  workflowRunId: true,
} as const;

/**
 * One dead letter by id with its run, audit trail and — when `temporal` is given and reachable —
 * the timeline of the failed execution read from its history (following continue-as-new from the
 * execution that claimed the run). Undefined when there is no such letter (or `id` is not a UUID).
 * Read-only. Temporal being unreachable is not an error: `timeline` is then undefined and
 * `timelineNote` says why.
 */
export async function getDeadLetter(
  ctx: PrismaCtx & { temporal?: Client | (() => Promise<Client>) },
  id: string,
): Promise<DeadLetterDetail | undefined> {
  if (!isDeadLetterId(id)) return undefined;
  const row = await ctx.prisma.deadLetter.findUnique({
    where: { id },
    include: { run: { select: RUN_SELECT } },
  });
  if (!row) return undefined;
  const { run, ...letter } = row;
  const audit = await ctx.prisma.auditEntry.findMany({
    where: { targetType: DEAD_LETTER_TARGET, targetId: row.id },
    orderBy: [{ at: 'asc' }, { id: 'asc' }],
  });
  const detail: DeadLetterDetail = { ...view(letter), run, audit };
  if (!letter.workflowRunId) {
    detail.timelineNote = 'the Temporal run id of the failed run is not known';
    return detail;
  }
  if (ctx.temporal === undefined) {
    detail.timelineNote = 'Temporal was not consulted';
    return detail;
  }
  let temporal: Client;
  try {
    temporal = typeof ctx.temporal === 'function' ? await ctx.temporal() : ctx.temporal;
  } catch (err) {
    detail.timelineNote = `Temporal is unreachable: ${redactUrlsIn(errorMessage(err))}`;
    return detail;
  }
  try {
    const found = await failedExecutionTimeline(temporal, letter.workflowId, letter.workflowRunId);
    detail.timeline = found.timeline;
    detail.timelineRunId = found.runId;
    if (found.note) detail.timelineNote = found.note;
  } catch (err) {
    detail.timelineNote =
      err instanceof WorkflowNotFoundError
        ? `the workflow run ${letter.workflowRunId} is no longer in Temporal (past its retention)`
        : `could not read the workflow history from Temporal: ${redactUrlsIn(errorMessage(err))}`;
  }
  return detail;
}
