/**
 * The business key — (job type, source, business date), one run each — and everything derived
 * from it (R6). Pure and deterministic: imported by workflows, activities and the client alike.
 */

/**
 * A job type (a plug-in registered with the worker): lower case letters, digits and `-`. It is
 * part of workflow ids, idempotency keys and compensation ids.
 */
export type JobType = string;
/** The demo job, and the job of everything recorded before jobs were plug-ins. */
export const FETCH_RECORDS: JobType = 'fetch-records';
const JOB_TYPE_RE = /^[a-z0-9][a-z0-9-]{0,40}$/;

/** True when `value` is a well-formed job type. */
export function isJobType(value: string): boolean {
  return JOB_TYPE_RE.test(value);
}

const ACTION_NAME_RE = /^[a-z][a-z0-9_-]{0,40}$/;

/**
 * True when `value` is a well-formed downstream action name (a job's ledger name for its
 * non-idempotent call): lower case letters, digits, `-` and `_`, at most 41.
 */
export function isActionName(value: string): boolean {
  return ACTION_NAME_RE.test(value);
}

/**
 * The job type an input names; inputs written before jobs were plug-ins name none, and were all
 * the demo job's.
 */
export function jobTypeOf(input: { jobType?: string | undefined }): JobType {
  return input.jobType ?? FETCH_RECORDS;
}

/** One run per business key, whoever starts it (Schedule, app client, backfill, replay). */
export interface BusinessKey {
  jobType: JobType;
  sourceId: string;
  /** Calendar date `YYYY-MM-DD` the run fetches, in the source's timezone. */
  businessDate: string;
}

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** The shape of a source id (see {@link isSourceId}). */
export const SOURCE_ID_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** True when `value` is a real calendar date written `YYYY-MM-DD` (rejects 2026-02-30). */
export function isBusinessDate(value: string): boolean {
  const m = DATE_RE.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(y, mo - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

/** Source ids appear in workflow ids, keys and URLs, so they are kept to a safe alphabet. */
export function isSourceId(value: string): boolean {
  return SOURCE_ID_RE.test(value);
}

const CORRELATION_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/** Correlation ids join logs and traces: short and printable, so no token fits in one (R2). */
export function isCorrelationId(value: string): boolean {
  return CORRELATION_ID_RE.test(value);
}

/**
 * Workflow id of a business key: `fetch/<jobType>/<sourceId>/<date>`. Every starter (client, CLI,
 * Schedule, replay, outbox) derives it here, so one key is one workflow id.
 */
export function workflowIdFor(key: BusinessKey): string {
  return `fetch/${key.jobType}/${key.sourceId}/${key.businessDate}`;
}

/**
 * Workflow id of the compensation of one claim (`round`) of a business key's run:
 * `compensate/<jobType>/<sourceId>/<date>/r<round>`. One at a time per claim; a later
 * one (after `compensations retry`) reuses the id. Claims never share one, so the compensation of
 * an earlier claim never blocks a later claim's.
 */
export function compensationWorkflowIdFor(key: BusinessKey, round: number): string {
  return `compensate/${key.jobType}/${key.sourceId}/${key.businessDate}/r${round}`;
}

/** Parses a workflow id made by {@link workflowIdFor}; undefined for anything else. */
export function parseWorkflowId(workflowId: string): BusinessKey | undefined {
  const parts = workflowId.split('/');
  if (parts.length !== 4 || parts[0] !== 'fetch') return undefined;
  const [, jobType, sourceId, businessDate] = parts as [string, string, string, string];
  if (!isJobType(jobType)) return undefined;
  if (!isSourceId(sourceId) || !isBusinessDate(businessDate)) return undefined;
  return { jobType, sourceId, businessDate };
}

/**
 * Stable idempotency key of one step of a run: `<jobType>:<sourceId>:<date>:<step>[:<n>]`.
 * Derived from the business key and the step only — never from an attempt or a run id — so every
 * retry, replay or second starter of the same business key presents the same key (R3).
 */
export function idempotencyKeyFor(key: BusinessKey, step?: string, n?: number): string {
  const base = `${key.jobType}:${key.sourceId}:${key.businessDate}`;
  if (step === undefined) return base;
  return n === undefined ? `${base}:${step}` : `${base}:${step}:${n}`;
}

/** Idempotency key of page `n` of a run: `<jobType>:<source>:<date>:page:<n>`. */
export function pageKeyFor(key: BusinessKey, pageNo: number): string {
  return idempotencyKeyFor(key, 'page', pageNo);
}

/** A `YYYY-MM-DD` business date as the UTC midnight Date that PostgreSQL DATE columns map to. */
export function dateColumn(businessDate: string): Date {
  return new Date(`${businessDate}T00:00:00Z`);
}
