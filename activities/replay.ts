/**
 * The replay workflow's activities (issue #7, R8 "replay at a limited rate", R11): pick the open
 * dead letters a replay restarts, record each restart, and count what the replay created.
 */
import { Prisma, type PrismaClient } from '../prisma/generated/client.ts';
import type { ActivityDeps } from './deps.ts';
import { recordAudit } from './audit-log.ts';

/** Which open dead letters a replay takes (all given filters must match). */
export interface ReplayFilter {
  jobType?: string;
  sourceId?: string;
  errorType?: string;
  /** ISO time: only letters written at or after it. */
  since?: string;
}

/** One dead letter a replay restarts: its id and business key, nothing else. */
export interface ReplayTarget {
  /** Absent from targets reserved before jobs were plug-ins (all the demo job's). */
  jobType?: string;
  deadLetterId: string;
  fetchRunId: string;
  sourceId: string;
  businessDate: string;
}

interface TargetRow {
  job_type: string;
  id: string;
  fetch_run_id: string;
  source_id: string;
  business_date: Date;
}

function where(filter: ReplayFilter): Prisma.Sql {
  const parts = [Prisma.sql`d.status = 'open'`];
  if (filter.jobType !== undefined) parts.push(Prisma.sql`d.job_type = ${filter.jobType}`);
  if (filter.sourceId !== undefined) parts.push(Prisma.sql`d.source_id = ${filter.sourceId}`);
  if (filter.errorType !== undefined) parts.push(Prisma.sql`d.error_type = ${filter.errorType}`);
  if (filter.since !== undefined) parts.push(Prisma.sql`d.created_at >= ${new Date(filter.since)}`);
  return Prisma.join(parts, ' AND ');
}

function target(row: TargetRow): ReplayTarget {
  return {
    jobType: row.job_type,
    deadLetterId: row.id,
    fetchRunId: row.fetch_run_id,
    sourceId: row.source_id,
    businessDate: row.business_date.toISOString().slice(0, 10),
  };
}

/**
 * The open dead letters `filter` selects, oldest first, at most `max`, one per run (the newest
 * letter of a run stands for it). Read-only: what `dlq replay --dry-run` shows.
 */
export async function openDeadLetters(
  prisma: Pick<PrismaClient, '$queryRaw'>,
  filter: ReplayFilter,
  max: number,
  reservedBy?: string,
): Promise<ReplayTarget[]> {
  const reserved =
    reservedBy === undefined
      ? Prisma.sql`d.replay_id IS NULL`
      : Prisma.sql`(d.replay_id IS NULL OR d.replay_id = ${reservedBy})`;
  const rows = await prisma.$queryRaw<TargetRow[]>`
    SELECT job_type, id::text, fetch_run_id::text, source_id, business_date FROM (
      SELECT DISTINCT ON (d.fetch_run_id) d.job_type, d.id, d.fetch_run_id, d.source_id, d.business_date, d.created_at
        FROM dead_letter d
       WHERE ${where(filter)} AND ${reserved}
       ORDER BY d.fetch_run_id, d.created_at DESC) latest
     ORDER BY created_at, id
     LIMIT ${max}`;
  return rows.map(target);
}

export function createReplayActivities(deps: ActivityDeps) {
  const { prisma } = deps;
  return {
    /**
     * Reserves the letters a replay will restart (their `replay_id`), so that two replays never
     * take the same letter. Repeat-safe: a retry returns the same reservation.
     */
    async reserveDeadLetters(input: {
      replayId: string;
      filter: ReplayFilter;
      max: number;
    }): Promise<ReplayTarget[]> {
      const candidates = await openDeadLetters(prisma, input.filter, input.max, input.replayId);
      if (candidates.length === 0) return [];
      // Conditional: a letter another replay reserved meanwhile is not taken (nor reported).
      const reserved = await prisma.$queryRaw<{ id: string }[]>`
        UPDATE dead_letter SET replay_id = ${input.replayId}, updated_at = now()
         WHERE id = ANY(${candidates.map((t) => t.deadLetterId)}::uuid[]) AND status = 'open'
           AND (replay_id IS NULL OR replay_id = ${input.replayId})
        RETURNING id::text`;
      const ours = new Set(reserved.map((r) => r.id));
      const targets = candidates.filter((t) => ours.has(t.deadLetterId));
      deps.log.info({ replayId: input.replayId, letters: targets.length }, 'replay reserved dead letters');
      return targets;
    },

    /**
     * Records that a replay restarted a letter's run (or found its key already done): the letter
     * is `retried`, with an audit entry naming the replay and who asked for it. Repeat-safe.
     */
    async markReplayed(input: {
      replayId: string;
      deadLetterId: string;
      actor: string;
      outcome: 'started' | 'suppressed';
      workflowRunId?: string;
    }): Promise<void> {
      await prisma.$transaction(async (tx) => {
        const changed = await tx.$executeRaw`
          UPDATE dead_letter
             SET status = 'retried', closed_at = now(), closed_by = ${input.actor},
                 close_reason = ${`replay ${input.replayId}: ${input.outcome}`}, updated_at = now()
           WHERE id = ${input.deadLetterId}::uuid AND status = 'open' AND replay_id = ${input.replayId}`;
        if (changed !== 1) return;
        await recordAudit(tx, {
          actor: input.actor,
          action: 'dead_letter.replay',
          targetType: 'dead_letter',
          targetId: input.deadLetterId,
          reason: `replay ${input.replayId}`,
          details: {
            replayId: input.replayId,
            outcome: input.outcome,
            workflowRunId: input.workflowRunId ?? null,
          },
        });
      });
    },

    /** Gives back letters a cancelled replay did not start: open for the next replay or retry. */
    async releaseDeadLetters(input: { replayId: string }): Promise<number> {
      return prisma.$executeRaw`
        UPDATE dead_letter SET replay_id = NULL, updated_at = now()
         WHERE replay_id = ${input.replayId} AND status = 'open'`;
    },

    /**
     * What the replayed runs wrote since the replay began, counted in the database: business rows
     * first written, outbox events, and new dead letters (runs that failed again).
     */
    async replayCounts(input: {
      fetchRunIds: string[];
      since: string;
    }): Promise<{ recordsCreated: number; eventsCreated: number; newDeadLetters: number }> {
      const since = new Date(input.since);
      const [row] = await prisma.$queryRaw<{ records: bigint; events: bigint; letters: bigint }[]>`
        SELECT (SELECT count(*) FROM fetched_record
                 WHERE fetch_run_id = ANY(${input.fetchRunIds}::uuid[]) AND created_at >= ${since}) AS records,
               (SELECT count(*) FROM outbox_event
                 WHERE aggregate_id = ANY(${input.fetchRunIds}) AND created_at >= ${since}) AS events,
               (SELECT count(*) FROM dead_letter
                 WHERE fetch_run_id = ANY(${input.fetchRunIds}::uuid[]) AND created_at >= ${since}) AS letters`;
      return {
        recordsCreated: Number(row?.records ?? 0),
        eventsCreated: Number(row?.events ?? 0),
        newDeadLetters: Number(row?.letters ?? 0),
      };
    },
  };
}
