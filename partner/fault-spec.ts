// The fault spec `POST /_admin/faults` and `FaultInjector.add` take, and its validation.
import { z } from 'zod';
import {
  EVENTS_FAULT_KINDS,
  FAULT_KINDS,
  type FaultKind,
  type FaultPhase,
  type FaultRoute,
  JOURNAL_FAULT_KINDS,
  LIST_FAULT_KINDS,
  MAX_DELAY_MS,
  MAX_EXTRA_ITEMS,
  MAX_FAULT_BODY_LENGTH,
  MAX_OVERSIZE_BYTES,
  SUBMISSIONS_FAULT_KINDS,
} from './fault-kinds.ts';
import { JOURNAL_ACTIONS, type JournalAction } from './journal.ts';
import { MAX_REFERENCE_LENGTH, SUBMISSION_ACTIONS, type SubmissionAction } from './submissions.ts';

const isEffectRoute = (route: FaultRoute | undefined) => route === 'submissions' || route === 'journal';
const isReadRoute = (route: FaultRoute | undefined) =>
  (route ?? 'records') === 'records' || route === 'rates';

const faultSpecSchema = z
  .strictObject({
    route: z.enum(['records', 'events', 'submissions', 'rates', 'journal']).optional(),
    sourceId: z.string().min(1).optional(),
    date: z.string().min(1).optional(),
    cursor: z.string().min(1).nullable().optional(),
    startingAfter: z.string().min(1).nullable().optional(),
    aggregateId: z.string().min(1).optional(),
    eventId: z.string().min(1).max(200).optional(),
    action: z.enum([...SUBMISSION_ACTIONS, ...JOURNAL_ACTIONS]).optional(),
    reference: z.string().min(1).max(MAX_REFERENCE_LENGTH).optional(),
    phase: z.enum(['before', 'after']).optional(),
    afterRequests: z.int().min(0).optional(),
    times: z.int().min(1).optional(),
    kind: z.enum(FAULT_KINDS),
    status: z.int().min(400).max(599).optional(),
    retryAfter: z.string().min(1).max(200).optional(),
    delayMs: z.int().min(0).max(MAX_DELAY_MS).optional(),
    lateEffectMs: z.int().min(0).max(MAX_DELAY_MS).optional(),
    body: z.string().max(MAX_FAULT_BODY_LENGTH).optional(),
    bytes: z.int().min(1).max(MAX_OVERSIZE_BYTES).optional(),
    contentLength: z.boolean().optional(),
    extraItems: z.int().min(1).max(MAX_EXTRA_ITEMS).optional(),
  })
  .refine((s) => s.kind !== 'status' || s.status !== undefined, {
    message: 'kind "status" needs a "status" (400..599)',
    path: ['status'],
  })
  .refine((s) => s.kind === 'status' || s.status === undefined, {
    message: '"status" is only valid with kind "status"',
    path: ['status'],
  })
  .refine((s) => s.kind === 'status' || s.body === undefined, {
    message: '"body" is only valid with kind "status"',
    path: ['body'],
  })
  .refine((s) => isReadRoute(s.route) || s.body === undefined, {
    message: '"body" is only valid on route "records" or "rates"',
    path: ['body'],
  })
  .refine((s) => s.kind !== 'oversize' || s.bytes !== undefined, {
    message: `kind "oversize" needs a "bytes" (1..${MAX_OVERSIZE_BYTES})`,
    path: ['bytes'],
  })
  .refine((s) => s.kind === 'oversize' || (s.bytes === undefined && s.contentLength === undefined), {
    message: '"bytes" and "contentLength" are only valid with kind "oversize"',
    path: ['kind'],
  })
  .refine((s) => s.kind === 'overfull' || s.extraItems === undefined, {
    message: '"extraItems" is only valid with kind "overfull"',
    path: ['extraItems'],
  })
  .refine((s) => s.kind !== 'delay' || s.delayMs !== undefined, {
    message: 'kind "delay" needs a "delayMs"',
    path: ['delayMs'],
  })
  .refine((s) => s.route !== 'events' || EVENTS_FAULT_KINDS.includes(s.kind), {
    message: 'route "events" takes only kinds "status", "reset" and "delay"',
    path: ['kind'],
  })
  .refine((s) => s.route !== 'submissions' || SUBMISSIONS_FAULT_KINDS.includes(s.kind), {
    message: 'route "submissions" takes only kinds "status", "reset" and "delay"',
    path: ['kind'],
  })
  .refine((s) => s.route !== 'journal' || JOURNAL_FAULT_KINDS.includes(s.kind), {
    message: 'route "journal" takes only kinds "status", "reset" and "delay"',
    path: ['kind'],
  })
  .refine((s) => s.route === 'rates' || !LIST_FAULT_KINDS.includes(s.kind), {
    message: 'kinds "loop", "empty_page" and "overfull" need route "rates"',
    path: ['kind'],
  })
  .refine(
    (s) =>
      (s.route ?? 'records') === 'records' ||
      (s.sourceId === undefined && s.cursor === undefined && (s.route === 'rates' || s.date === undefined)),
    {
      message: '"sourceId" and "cursor" match records requests only, "date" records and rates requests',
      path: ['route'],
    },
  )
  .refine((s) => s.route === 'rates' || s.startingAfter === undefined, {
    message: '"startingAfter" needs route "rates"',
    path: ['startingAfter'],
  })
  .refine((s) => s.route === 'events' || (s.aggregateId === undefined && s.eventId === undefined), {
    message: '"aggregateId" and "eventId" need route "events"',
    path: ['route'],
  })
  .refine((s) => isEffectRoute(s.route) || (s.action === undefined && s.reference === undefined), {
    message: '"action" and "reference" need route "submissions" or "journal"',
    path: ['route'],
  })
  .refine(
    (s) =>
      s.action === undefined ||
      (s.route === 'journal'
        ? (JOURNAL_ACTIONS as readonly string[]).includes(s.action)
        : (SUBMISSION_ACTIONS as readonly string[]).includes(s.action)),
    {
      message: `"action" on route "journal" is one of ${JOURNAL_ACTIONS.join(', ')}; else one of ${SUBMISSION_ACTIONS.join(', ')}`,
      path: ['action'],
    },
  )
  .refine((s) => isEffectRoute(s.route) || s.phase === undefined, {
    message: '"phase" needs route "submissions" or "journal"',
    path: ['phase'],
  })
  .refine(
    (s) =>
      s.lateEffectMs === undefined ||
      (isEffectRoute(s.route) && s.kind === 'delay' && (s.phase ?? 'before') === 'before'),
    {
      message: '"lateEffectMs" needs route "submissions" or "journal", kind "delay" and phase "before"',
      path: ['lateEffectMs'],
    },
  )
  .refine((s) => s.phase !== 'after' || s.action !== 'lookup', {
    message: 'phase "after" is not valid with action "lookup" (a lookup has no effect)',
    path: ['phase'],
  });

/** A fault to inject, as accepted by `POST /_admin/faults` and `FaultInjector.add`. */
export interface FaultSpec {
  /** Route the fault hits; absent = `records`. A fault never hits the other route. */
  route?: FaultRoute;
  /** Only requests for this source (absent = any). Records route only. */
  sourceId?: string;
  /** Only requests for this date (absent = any). Records and rates routes only. */
  date?: string;
  /** Only this page: a cursor string, or null for the first page (absent = any page). Records route only. */
  cursor?: string | null;
  /** Only this rates page: a `starting_after` id, or null for the first page (absent = any). Rates route only. */
  startingAfter?: string | null;
  /** Only deliveries of events of this aggregate (absent = any). Events route only. */
  aggregateId?: string;
  /** Only deliveries of this event id (absent = any). Events route only. */
  eventId?: string;
  /** Only requests of this action (absent = any), one of the route's own. Effect routes only. */
  action?: SubmissionAction | JournalAction;
  /**
   * Only requests about this reference (absent = any): the submitted or looked-up reference, or for
   * confirm/void the target submission's or journal entry's. Effect routes (submissions, journal) only.
   */
  reference?: string;
  /**
   * Whether the fault hits before the request's effect (default) or after it; `after` is not valid
   * with action `lookup`. Effect routes (submissions, journal) only.
   */
  phase?: FaultPhase;
  /** Let the first n matching requests through untouched. Default 0. */
  afterRequests?: number;
  /** How many matching requests the fault hits before it expires. Default 1. */
  times?: number;
  kind: FaultKind;
  /** HTTP status for kind `status` (400..599). */
  status?: number;
  /** `Retry-After` header value for kind `status`. */
  retryAfter?: string;
  /** Wait before responding, for kind `delay`. */
  delayMs?: number;
  /**
   * Late effects of this `before` delay on an effect route, overriding the server's
   * `lateEffectMs` (0 = off for this fault). A client that leaves at most this long before the
   * delay ends still gets its request applied when the delay ends (see `FaultKind`).
   */
  lateEffectMs?: number;
  /**
   * Kind `status` on the read routes (records, rates) only: the text sent as the error body's `message` (at most
   * {@link MAX_FAULT_BODY_LENGTH} characters) instead of `injected status <n>`.
   */
  body?: string;
  /** Kind `oversize`: the body's size in bytes (1..{@link MAX_OVERSIZE_BYTES}). */
  bytes?: number;
  /**
   * Kind `oversize`: announce the size in a `Content-Length` header (default false: chunked, so a
   * client can only find out by counting what it reads).
   */
  contentLength?: boolean;
  /** Kind `overfull`: how many items beyond `limit` the page carries (1..{@link MAX_EXTRA_ITEMS}, default 1). */
  extraItems?: number;
}

/** Thrown by `FaultInjector.add` for an invalid spec; `message` says what is wrong. */
export class InvalidFaultSpecError extends Error {
  override readonly name = 'InvalidFaultSpecError';
}

/**
 * Parses an untrusted fault spec (e.g. a JSON body).
 * Pure; throws `InvalidFaultSpecError` with a readable message when invalid.
 */
export function parseFaultSpec(input: unknown): FaultSpec {
  const result = faultSpecSchema.safeParse(input);
  if (!result.success) throw new InvalidFaultSpecError(z.prettifyError(result.error));
  return result.data;
}
