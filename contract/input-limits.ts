/**
 * The bounds of a fetch-records run's workflow input, in one place: the client checks them before
 * it starts a run, the workflow checks them again at its boundary (a start from the Web UI or
 * `temporal workflow start` skips the client), and the activities that touch the same values
 * check against the same numbers. Pure constants: workflow code imports them.
 */

/** Largest page (records per storePage transaction and staged row) a start may ask for. */
export const MAX_PAGE_SIZE = 1000;

/** Most pages one workflow execution handles before it continues as new. */
export const MAX_PAGES_PER_EXECUTION = 1000;

/**
 * Longest partner cursor accepted, in characters. A cursor is heartbeated to Temporal, kept in the
 * workflow's history and state, staged in PostgreSQL and sent back to the partner: a partner must
 * not be able to make any of these grow without bound.
 */
export const MAX_CURSOR_LENGTH = 1024;

/** Longest `scheduledAt` accepted (an ISO 8601 instant with nanoseconds and an offset fits). */
export const MAX_INSTANT_LENGTH = 40;

/** Safe code of every failure that refuses a workflow input (the workflow's and `claimRun`'s). */
export const INVALID_WORKFLOW_INPUT = 'INVALID_WORKFLOW_INPUT';

const INSTANT_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** True for an ISO 8601 instant with an explicit offset (`Z` or `±hh:mm`) that is a real time. */
export function isIsoInstant(value: string): boolean {
  return value.length <= MAX_INSTANT_LENGTH && INSTANT_RE.test(value) && Number.isFinite(Date.parse(value));
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a UUID written the usual way (run ids and lease tokens). */
export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}

/** Largest fairness weight a source may have on its downstream's task queue (R8). */
export const MAX_FAIRNESS_WEIGHT = 1000;

/** Longest task queue name accepted (Temporal's default limit on ids and names). */
export const MAX_TASK_QUEUE_LENGTH = 1000;

/** `<deployment task queue>-ds-<downstream>`, the only queue a run's page fetches may move to. */
const PARTNER_QUEUE_RE = /^[^\p{Cc}]+-ds-[a-z][a-z0-9_-]{0,62}$/u;

/** True for the task queue of an isolated downstream's page fetches (db/ledger/downstreams.ts names them). */
export function isPartnerQueue(value: string): boolean {
  return value.length <= MAX_TASK_QUEUE_LENGTH && PARTNER_QUEUE_RE.test(value);
}
