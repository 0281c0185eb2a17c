/**
 * What a replay of dead letters shares with its starters (the CLI, apps): input, progress and
 * report shapes, its query and signals, its workflow id. Importable outside workflow code: it
 * defines messages only (workflows/replay-dead-letters.ts is the workflow).
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { ReplayFilter } from '../db/dead-letters/replay.ts';

/**
 * Most letters one replay takes: its history (about 20 events a letter) stays well under
 * Temporal's limits, and so does its number of pending children.
 */
export const MAX_REPLAY_LETTERS = 1000;
/** Fastest replay rate accepted, starts per second. */
export const MAX_REPLAY_RATE = 50;

export interface ReplayInput {
  replayId: string;
  filter: ReplayFilter;
  /** Starts per second, at most {@link MAX_REPLAY_RATE}; fractions allowed (0.5 = one every 2 s). */
  ratePerSecond: number;
  max: number;
  /** Who asked (kept on each letter and in the audit trail). */
  actor: string;
}

export interface ReplayProgress {
  total: number;
  /** Runs restarted so far (suppressed ones not included). */
  started: number;
  succeeded: number;
  failed: number;
  /** The key was already running or done: nothing restarted (idempotency). */
  suppressed: number;
  paused: boolean;
  ratePerSecond: number;
  /** Starts in the last 10 s, per second. */
  observedRate: number;
  phase: 'reserving' | 'starting' | 'waiting' | 'reporting' | 'done';
}

export interface ReplayReport {
  replayId: string;
  total: number;
  replayed: number;
  succeeded: number;
  /** Failed again: each wrote a new dead letter. */
  stillFailing: number;
  suppressed: number;
  /** Letters a cancel left unstarted (given back, open). */
  notStarted: number;
  newDeadLetters: number;
  recordsCreated: number;
  eventsCreated: number;
  cancelled: boolean;
  startedAt: string;
  finishedAt: string;
}

export const replayProgressQuery = defineQuery<ReplayProgress>('progress');
export const pauseReplaySignal = defineSignal('pause');
export const resumeReplaySignal = defineSignal('resume');

/** Workflow id of a replay. */
export function replayWorkflowId(replayId: string): string {
  return `replay/${replayId}`;
}

/** The replay id of a workflow id made by {@link replayWorkflowId} (or the id itself). */
export function replayIdOf(id: string): string {
  return id.startsWith('replay/') ? id.slice('replay/'.length) : id;
}
