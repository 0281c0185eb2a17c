/**
 * The replay workflow's activities (R8 "replay at a limited rate", R11): pick the open
 * dead letters a replay restarts, record each restart, and count what the replay created.
 */
import { DEAD_LETTER_TARGET, recordAudit } from '../../db/audit.ts';
import {
  closeReplayedLetter,
  countWrittenSince,
  openDeadLetters,
  releaseReplayReservations,
  type ReplayFilter,
  type ReplayTarget,
  reserveForReplay,
} from '../../db/dead-letters/replay.ts';
import type { ActivityDeps } from '../deps.ts';

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
      const ours = await reserveForReplay(
        prisma,
        input.replayId,
        candidates.map((t) => t.deadLetterId),
      );
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
        const changed = await closeReplayedLetter(tx, {
          deadLetterId: input.deadLetterId,
          replayId: input.replayId,
          actor: input.actor,
          reason: `replay ${input.replayId}: ${input.outcome}`,
          runStarted: input.outcome === 'started',
        });
        if (!changed) return;
        await recordAudit(tx, {
          actor: input.actor,
          action: 'dead_letter.replay',
          targetType: DEAD_LETTER_TARGET,
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
      return releaseReplayReservations(prisma, input.replayId);
    },

    /**
     * What the replayed runs wrote since the replay began, counted in the database: business rows
     * first written, outbox events, and new dead letters (runs that failed again).
     */
    async replayCounts(input: {
      fetchRunIds: string[];
      since: string;
    }): Promise<{ recordsCreated: number; eventsCreated: number; newDeadLetters: number }> {
      return countWrittenSince(prisma, input.fetchRunIds, new Date(input.since));
    },
  };
}
