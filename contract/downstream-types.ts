/**
 * What workflows and activities exchange about non-idempotent downstream actions (the
 * compensation ledger, table `downstream_action`): ids, states and counters, never payloads.
 */

/** Downstream actions a run may take (the compensation ledger's `action`). */
export const SUBMIT_SUMMARY = 'submit-summary';

/** Where a non-idempotent downstream action stands (table `downstream_action`). */
export type DownstreamStateName =
  | 'attempting'
  | 'unknown'
  | 'confirmed'
  | 'compensating'
  | 'compensated'
  | 'not_applied'
  | 'needs_manual'
  | 'resolved';

export interface RecordIntentInput {
  /** Absent from activities scheduled before jobs were plug-ins (all the demo job's). */
  jobType?: string;
  fetchRunId: string;
  leaseToken: string;
  sourceId: string;
  businessDate: string;
  round: number;
  action: string;
  /** Order within the run; compensations run in reverse. */
  step: number;
  /**
   * Set by workflows that settle an earlier claim's unsettled action themselves: the activity
   * then answers `{ kind: 'earlier' }` instead of failing with EARLIER_ACTION_UNSETTLED (which
   * workflow code deployed before stays given).
   */
  settleEarlier?: boolean;
}

/** A ledger row as activities hand it to workflows: ids and counters only. */
export interface DownstreamActionView {
  actionId: string;
  state: DownstreamStateName;
  attempts: number;
  partnerId: string | null;
}

/**
 * This claim's action (its own row, or one it adopted from an earlier claim), or an earlier
 * claim's action that must be settled first. Results recorded before `kind` existed are views.
 */
export type RecordIntentResult =
  (DownstreamActionView & { kind?: 'current' }) | { kind: 'earlier'; action: DownstreamActionView };

export interface AdoptActionInput {
  actionId: string;
  fetchRunId: string;
  leaseToken: string;
  /** The claim taking the action over. */
  round: number;
}

export interface SubmitSummaryInput {
  actionId: string;
  fetchRunId: string;
  leaseToken: string;
  sourceId: string;
  /**
   * Calls the workflow knows were made before this one. The activity calls the partner only when
   * the ledger agrees: more calls there means an earlier attempt died with its outcome unrecorded.
   */
  expectedAttempts: number;
}

export interface ReconcileActionInput {
  actionId: string;
  /**
   * What "not found at the partner" leads to once the last call has settled: `retry` (the run
   * may call again: back to `attempting`) or `settle` (compensation: `not_applied`).
   */
  onAbsent: 'retry' | 'settle';
}

export type ReconcileActionResult =
  | { found: true; partnerId: string; partnerState: string }
  | {
      found: false;
      attempts: number;
      /**
       * Set while the last call may still take effect at the partner (its settle window is not
       * over): nothing found proves nothing yet; look again after this long. Absent = settled.
       */
      settleInMs?: number;
    };

export interface ConfirmSubmissionInput {
  actionId: string;
  fetchRunId: string;
  leaseToken: string;
  sourceId: string;
}

export interface MarkNeedsManualInput {
  actionId: string;
  errorType: string;
  errorMessage: string;
}

export interface CompensateRunInput {
  fetchRunId: string;
  sourceId: string;
  businessDate: string;
  /** The claim whose actions are undone; a later claim of the same key has its own rows. */
  round: number;
  /**
   * Why: the run failed for good, was cancelled, an operator asked (`compensations retry`), or
   * effects the ledger did not expect were found (`strays`: voided whatever the run's outcome).
   */
  reason: 'failed' | 'cancelled' | 'operator' | 'strays';
}

export interface CompensateRunResult {
  compensated: number;
  notApplied: number;
  needsManual: number;
  /** The run's status afterwards: `compensated` once every action of a failed run is settled. */
  runStatus: string;
}
