/**
 * The replay's statements on `dead_letter` (R8, R11): which open letters a replay
 * takes, their reservation, their closing as retried, their release (a stale one's too), and what
 * the replayed runs wrote since.
 */
import { Prisma, type PrismaClient } from '../../prisma/generated/client.ts';
import { RUN_SUCCEEDED_ACTOR } from './close.ts';

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
 * letter of a run stands for it), not reserved by another replay than `reservedBy`. Read-only:
 * what `dlq replay --dry-run` shows.
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

/**
 * Reserves the letters `deadLetterIds` for `replayId` where they are still open and not another
 * replay's (a letter another replay reserved meanwhile is not taken). Returns the ids reserved.
 * Repeat-safe.
 */
export async function reserveForReplay(
  prisma: Pick<PrismaClient, '$queryRaw'>,
  replayId: string,
  deadLetterIds: readonly string[],
): Promise<Set<string>> {
  const reserved = await prisma.$queryRaw<{ id: string }[]>`
    UPDATE dead_letter SET replay_id = ${replayId}, updated_at = now()
     WHERE id = ANY(${deadLetterIds}::uuid[]) AND status = 'open'
       AND (replay_id IS NULL OR replay_id = ${replayId})
    RETURNING id::text`;
  return new Set(reserved.map((r) => r.id));
}

/**
 * Closes a letter `replayId` reserved as `retried` by `actor`, with `reason`. Returns whether it
 * changed (false for a repeat, or a letter no longer the replay's to close).
 *
 * With `runStarted` (the replay started the letter's run), a letter that run's success already
 * closed as `superseded` is closed as `retried` too: the run can end before the replay gets to
 * record that it started it (the start and this record are two steps of the replay's workflow), and
 * the letter must still say that the replay retried it, and who asked for that. Only a letter this
 * replay reserved, and only a supersede by a run's success, is taken over.
 */
export async function closeReplayedLetter(
  tx: Pick<PrismaClient, '$executeRaw'>,
  letter: { deadLetterId: string; replayId: string; actor: string; reason: string; runStarted: boolean },
): Promise<boolean> {
  const closable = letter.runStarted
    ? Prisma.sql`(status = 'open' OR (status = 'superseded' AND closed_by = ${RUN_SUCCEEDED_ACTOR}))`
    : Prisma.sql`status = 'open'`;
  const changed = await tx.$executeRaw`
    UPDATE dead_letter
       SET status = 'retried', closed_at = now(), closed_by = ${letter.actor},
           close_reason = ${letter.reason}, updated_at = now()
     WHERE id = ${letter.deadLetterId}::uuid AND replay_id = ${letter.replayId} AND ${closable}`;
  return changed === 1;
}

/** Gives back the open letters `replayId` reserved; returns how many. Idempotent. */
export async function releaseReplayReservations(
  prisma: Pick<PrismaClient, '$executeRaw'>,
  replayId: string,
): Promise<number> {
  return prisma.$executeRaw`
    UPDATE dead_letter SET replay_id = NULL, updated_at = now()
     WHERE replay_id = ${replayId} AND status = 'open'`;
}

/**
 * Gives back letter `deadLetterId`'s reservation by `replayId` (a stale one: that replay is no
 * longer running), while the letter is open. Idempotent.
 */
export async function releaseStaleReservation(
  prisma: Pick<PrismaClient, '$executeRaw'>,
  letter: { deadLetterId: string; replayId: string },
): Promise<void> {
  await prisma.$executeRaw`
    UPDATE dead_letter SET replay_id = NULL, updated_at = now()
     WHERE id = ${letter.deadLetterId}::uuid AND replay_id = ${letter.replayId} AND status = 'open'`;
}

/**
 * What runs `fetchRunIds` wrote since `since`, counted in the database: business rows first
 * written, outbox events, new dead letters. Read-only.
 */
export async function countWrittenSince(
  prisma: Pick<PrismaClient, '$queryRaw'>,
  fetchRunIds: readonly string[],
  since: Date,
): Promise<{ recordsCreated: number; eventsCreated: number; newDeadLetters: number }> {
  const [row] = await prisma.$queryRaw<{ records: bigint; events: bigint; letters: bigint }[]>`
    SELECT (SELECT count(*) FROM fetched_record
             WHERE fetch_run_id = ANY(${fetchRunIds}::uuid[]) AND created_at >= ${since}) AS records,
           (SELECT count(*) FROM outbox_event
             WHERE aggregate_id = ANY(${fetchRunIds}) AND created_at >= ${since}) AS events,
           (SELECT count(*) FROM dead_letter
             WHERE fetch_run_id = ANY(${fetchRunIds}::uuid[]) AND created_at >= ${since}) AS letters`;
  return {
    recordsCreated: Number(row?.records ?? 0),
    eventsCreated: Number(row?.events ?? 0),
    newDeadLetters: Number(row?.letters ?? 0),
  };
}
