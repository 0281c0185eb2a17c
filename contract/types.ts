import type { BusinessKey } from './business-key.ts';
import type { PartnerPresetName } from './retry-presets.ts';

/**
 * Inputs and results of the fetch-records workflow and its activities. Plain data only: these
 * travel through Temporal's history, so they carry ids and cursors, never secrets (R2).
 */

/** Who may ask for a run (kept on the FetchRun for audit). */
export const REQUESTED_BY = [
  'app-client',
  'cli',
  'schedule',
  'backfill',
  'replay',
  'npm-start',
  'test',
] as const;
export type RequestedBy = (typeof REQUESTED_BY)[number];

/** Default bound on a run's workflow input (R12d): ids and cursors only, so a few KiB at most. */
export const DEFAULT_MAX_INPUT_BYTES = 16 * 1024;

export interface FetchRecordsInput {
  /** The source's job (`fetch/<jobType>/…`); absent from runs started before jobs were plug-ins. */
  jobType?: string;
  sourceId: string;
  /** `YYYY-MM-DD`, already validated by the starter. */
  businessDate: string;
  correlationId: string;
  requestedBy: RequestedBy;
  /** ISO time the run was due; defaults to the workflow's start time. */
  scheduledAt?: string;
  /** Records per stored page (our unit of idempotency); default: the source's page size. */
  pageSize?: number;
  /** Pages handled before continuing as new, to stay far from history limits. */
  pagesPerExecution?: number;
  /** Set by continue-as-new only: the claim and progress carried into the next execution. */
  resume?: ResumeState;
}

export interface ResumeState {
  /** The run's job type, as claimed; absent from state written before jobs were plug-ins. */
  jobType?: string;
  fetchRunId: string;
  leaseToken: string;
  cursor: string | null;
  pagesStored: number;
  recordsStored: number;
  pageSize: number;
  /** The source's partner retry preset, fixed for the run. */
  retryPolicy: PartnerPresetName;
  /** The claim's `attempt`: downstream actions of this claim are recorded under it. */
  round?: number;
  /** Whether the run ends with the job's downstream action (Source.submitSummary). */
  submitSummary?: boolean;
  /** The ledger name of the job's downstream action; absent: the demo job's `submit-summary`. */
  downstreamAction?: string;
  /** Continued as new while waiting for its paused source: the next execution waits first. */
  waitingForResume?: boolean;
  /**
   * When the run must have ended (ISO), fixed at its claim from the source's maximum run time
   * (R9); absent from state written before runs had one (those run unbounded).
   */
  deadlineAt?: string;
  /**
   * The task queue of the run's page fetches when its source's downstream is isolated (R8),
   * fixed at its claim; absent: the workflow's own task queue.
   */
  partnerQueue?: string;
  /** The source's fairness weight on that queue (R8), fixed at its claim; absent: 1. */
  partnerWeight?: number;
  /**
   * The run's page fetches are local activities (Source.localFetch), fixed at its claim; absent:
   * activity tasks on `partnerQueue` or the workflow's own queue.
   */
  localFetch?: boolean;
}

export type FetchRecordsResult =
  | { status: 'succeeded'; fetchRunId: string; pages: number; records: number }
  | { status: 'duplicate'; fetchRunId: string; existingStatus: string; ownerWorkflowId: string };

export interface ClaimInput {
  jobType?: string;
  sourceId: string;
  businessDate: string;
  workflowId: string;
  workflowRunId: string;
  correlationId: string;
  requestedBy: RequestedBy;
  scheduledAt: string;
}

export type ClaimResult =
  | {
      outcome: 'claimed';
      jobType: string;
      fetchRunId: string;
      leaseToken: string;
      attempt: number;
      cursor: string | null;
      pagesStored: number;
      recordsStored: number;
      pageSize: number;
      retryPolicy: PartnerPresetName;
      submitSummary: boolean;
      /** The job's downstream action, when the run makes it. */
      downstreamAction?: string;
      /** An operator paused the source: the run waits before its first page. */
      sourcePaused: boolean;
      /** The source's maximum run time (R9); absent from claims recorded before sources had one. */
      maxRunTimeMs?: number;
      /** The task queue of its downstream when isolated (R8); absent: the workflow's own. */
      partnerQueue?: string;
      /** The source's fairness weight among its downstream's sources (R8); absent from older claims. */
      partnerWeight?: number;
      /** Its page fetches are local activities; absent: activity tasks (and from older claims). */
      localFetch?: boolean;
    }
  /** The business key's run already succeeded: nothing to do, its outcome is reported. */
  | { outcome: 'succeeded'; fetchRunId: string; pages: number; records: number }
  | { outcome: 'duplicate'; fetchRunId: string; status: string; ownerWorkflowId: string };

/** A partner record: its own id plus whatever fields the partner sends. */
export interface PartnerRecord {
  id: string;
  [field: string]: unknown;
}

export interface FetchPageInput {
  /** Absent from activities scheduled before jobs were plug-ins (all the demo job's). */
  jobType?: string;
  /** The run and its lease: staging writes are fenced by it (R1). */
  fetchRunId: string;
  leaseToken: string;
  sourceId: string;
  businessDate: string;
  /** Index of the page being fetched (0-based); part of its idempotency key. */
  pageNo: number;
  /** Partner cursor to start from; null for the first page. */
  cursor: string | null;
  pageSize: number;
  /**
   * The step runs again after its partner's breaker held it back: its first partner call is a
   * retry for the downstream's retry budget (R8), as a retried attempt's is. Not set after a wait
   * for our own database (workflows/database-outage.ts).
   */
  rerun?: boolean;
  /**
   * A local fetch's step deadline (epoch ms): its schedule-to-close from when the workflow asked
   * for it. The SDK gives a local activity retried after a durable timer its reschedule time as its
   * scheduled time, and the whole schedule-to-close again, while it ends the step at the deadline
   * of the first schedule; the activity's retry timing needs the real one.
   */
  stepDeadlineMs?: number;
}

/** Records stay staged in PostgreSQL; only their count and the next cursor enter the history. */
export interface FetchPageResult {
  recordCount: number;
  nextCursor: string | null;
}

export interface StorePageInput {
  /** Absent from activities scheduled before jobs were plug-ins (all the demo job's). */
  jobType?: string;
  fetchRunId: string;
  leaseToken: string;
  sourceId: string;
  businessDate: string;
  pageNo: number;
  /** What fetchPage staged: storePage checks the staged page still says the same. */
  recordCount: number;
  nextCursor: string | null;
}

export interface StorePageResult {
  /** The page's first outbox event; null when the job emitted none. */
  eventId: string | null;
  /** Every event of the page, in order (absent from pages stored before jobs could emit many). */
  eventIds?: string[];
  recordCount: number;
  /** True when the page had been stored before and nothing was written now. */
  replayed: boolean;
  /** The source is paused (read in the same transaction): the run waits before its next page. */
  sourcePaused: boolean;
}

export interface CompleteRunInput {
  /** Absent from activities scheduled before jobs were plug-ins (all the demo job's). */
  jobType?: string;
  fetchRunId: string;
  leaseToken: string;
  sourceId: string;
  businessDate: string;
}

export interface CompleteRunResult {
  eventId: string;
  pages: number;
  records: number;
}

export interface FinishRunInput {
  fetchRunId: string;
  leaseToken: string;
  status: 'cancelled' | 'dead_lettered';
  /** Error type of the failure (contract/error-types.ts; absent for a cancellation). */
  errorType?: string;
  /** Already redacted by the activity that failed. */
  errorMessage?: string;
  /** The failure's safe code (e.g. HTTP_422), when it has one. */
  errorCode?: string;
}

/** What `finishRun` did. */
export interface FinishRunResult {
  /** Whether it ended the run (false: a repeat, or the run is not this claim's to end). */
  finished: boolean;
  deadLetterId: string | null;
  /**
   * The run had already succeeded under this claim (its `completeRun` committed in a workflow task
   * that then failed, e.g. on a cancel that arrived during it): its totals. Absent otherwise.
   */
  succeeded?: { pages: number; records: number };
}

/** A start whose input the workflow refused, to be recorded against the key its workflow id names. */
export interface InvalidStartInput {
  key: BusinessKey;
  workflowId: string;
  workflowRunId: string;
  /** When the refused execution started (the run row's `scheduled_at` if the row is new). */
  startedAt: string;
  /** The input's correlation id when it is a valid one, else the execution's run id. */
  correlationId: string;
  /** The checker's message: field names and rules, never a value. */
  message: string;
}

export interface InvalidStartResult {
  /** Whether the key's run now records the refusal (`dead_lettered`, one dead letter). */
  recorded: boolean;
  deadLetterId: string | null;
  /** Why not: the source is unknown or removed or runs another job, or the run is not free. */
  skipped?: 'no-source' | 'run-not-free';
}

/**
 * Signal to a running run that its source was resumed (`durable-fetch sources resume`): a run
 * waiting at a page boundary goes on at once instead of at its next check.
 */
export const SOURCE_RESUMED_SIGNAL = 'sourceResumed';

export interface CheckPauseInput {
  fetchRunId: string;
  leaseToken: string;
  sourceId: string;
}

export * from './downstream-types.ts';
