/**
 * What a reconcile reports: the finding codes (mismatches and notes), the per-run and overall
 * reports, and how a finding quotes counts and ids (a whole date could name many thousands).
 */
import type { RunStatus } from '../../prisma/generated/client.ts';

/** A mismatch: something the database and the partner (or the database and itself) disagree on. */
export const MISMATCH_CODES = [
  // The database against itself.
  'RECORDS_COUNT',
  'PAGES_COUNT',
  'RECORD_MISSING',
  'RECORD_WITHOUT_EVENT',
  'DUPLICATE_IN_EVENTS',
  'COMPLETION_EVENT_MISSING',
  'COMPLETION_EVENT_UNEXPECTED',
  'COMPLETION_EVENT_COUNTS',
  'OUTBOX_DEAD',
  // The run's records against the partner's.
  'PARTNER_UNREACHABLE',
  'MISSING_AT_OURS',
  'EXTRA_AT_OURS',
  // The compensation ledger against the partner's submissions.
  'SUBMISSION_MISSING',
  'SUBMISSION_NOT_CONFIRMED',
  'DUPLICATE_SUBMISSION',
  'ACTION_NOT_AT_PARTNER',
  'ACTION_VOIDED_AT_PARTNER',
  'EXTRA_LIVE_SUBMISSION',
  'COMPENSATED_BUT_LIVE',
  'NOT_APPLIED_BUT_LIVE',
  'UNCOMPENSATED_ACTION',
  'UNSETTLED_ACTION',
  'STRAY_NOT_VOIDED',
] as const;
export type MismatchCode = (typeof MISMATCH_CODES)[number];

/** Information only, never a mismatch. */
export const NOTE_CODES = [
  'IN_PROGRESS',
  'OUTBOX_PENDING',
  'ACTION_RESOLVED',
  'INCREMENTAL_NOT_COMPARED',
] as const;
export type NoteCode = (typeof NOTE_CODES)[number];

export interface Finding<C extends string = MismatchCode | NoteCode> {
  code: C;
  /** One line for a human. */
  message: string;
  /** What the check wanted, and what it found (JSON values). */
  expected?: unknown;
  actual?: unknown;
  /** The compensation ledger row concerned, if any. */
  actionId?: string;
  /** The record or event ids concerned (at most 1000; the message quotes the first few). */
  ids?: string[];
}

export interface RunReport {
  runId: string;
  workflowId: string;
  jobType: string;
  sourceId: string;
  /** `YYYY-MM-DD`. */
  businessDate: string;
  status: RunStatus;
  /** The run row's counters, and what the database holds for it. */
  records: number;
  pages: number;
  /** Outbox events of the run (any topic, any status). */
  events: number;
  /** Rows of the compensation ledger of the run. */
  compensations: number;
  /** Records the partner holds for (source, date); null when not compared (or unreadable). */
  partnerRecords: number | null;
  mismatches: Finding<MismatchCode>[];
  notes: Finding<NoteCode>[];
}

export interface ReconcileReport {
  runs: RunReport[];
  /** Mismatches over all runs. */
  mismatches: number;
}

/** Ids quoted in one message, at most. */
const QUOTE = 5;

export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** `a, b, c and 4 more`. */
export function quote(ids: readonly string[]): string {
  const shown = ids.slice(0, QUOTE).join(', ');
  return ids.length > QUOTE ? `${shown} and ${ids.length - QUOTE} more` : shown;
}

/** The ids a finding carries: a whole date could be many thousands. */
export function sample(ids: readonly string[]): string[] {
  return ids.slice(0, 1000);
}
