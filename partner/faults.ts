import { z } from 'zod';
import { MAX_REFERENCE_LENGTH, SUBMISSION_ACTIONS, type SubmissionAction } from './submissions.ts';

/**
 * What an injected fault does to a matching request:
 * - `status`: respond with `status` (and `Retry-After: retryAfter` when given), body untouched by the app;
 *   on the records route the JSON body's `message` is `body` when given (e.g. to test that an
 *   error body carrying a token never reaches a log or a record);
 * - `reset`: destroy the socket with a TCP RST, no response;
 * - `delay`: wait `delayMs`, then respond normally (lets clients hit their response timeout);
 * - `truncate`: send headers and half the body, then destroy the socket.
 * On the events route a `status` or `reset` fault leaves the event unapplied; `delay` applies it
 * after the wait. Only these three kinds are valid there.
 * On the submissions route (also only these three kinds) the fault's `phase` decides whether the
 * effect (create, confirm, void) happens: `before` (default) faults hit before it (`status`/`reset`:
 * no effect; `delay`: the effect happens after the wait, unless the client left or the partner
 * closed meanwhile), `after` faults hit once it happened (`status`: an error answer for a done
 * effect; `reset`: a lost answer; `delay`: the answer after the wait, if the client is still there).
 * Late effects, as real partners have them: with a late-effect window (`lateEffectMs` of the fault,
 * else of the server; 0 = off), a `before` delay whose client leaves at most that long before the
 * wait ends is still processed when the wait ends, as if the partner had not noticed. Its one
 * ledger entry is still the 499 `client_closed` one, recorded then, with `late: true`, the
 * submission id and `effect: true` when the request changed something. A client leaving earlier
 * than that, or a partner closing before the wait ends, drops the request as without the window.
 */
/**
 * `malformed`: 200 with a body that is not JSON; `schema`: 200 with JSON of the wrong shape;
 * `oversize` (records route only): 200 with the normal page, syntactically valid, whose records
 * carry a `padding` string making the body `bytes` long (at least the page itself), streamed in
 * chunks as the client reads, with a `Content-Length` only when `contentLength` is true. It is
 * recorded once the body ended or the client left, with `bodyBytes` and `bytesSent`.
 */
export type FaultKind = 'status' | 'reset' | 'delay' | 'truncate' | 'malformed' | 'schema' | 'oversize';

/**
 * The route a fault hits: `GET /sources/:sourceId/records`, `POST /events`, or the submissions
 * routes (`POST /submissions`, `POST /submissions/:id/confirm|void`, `GET /submissions?reference=`).
 */
export type FaultRoute = 'records' | 'events' | 'submissions';

/** Whether a submissions fault hits before the request's effect or after it. */
export type FaultPhase = 'before' | 'after';

/** Fault kinds valid on the events route. */
export const EVENTS_FAULT_KINDS: readonly FaultKind[] = ['status', 'reset', 'delay'];

/** Fault kinds valid on the submissions route. */
export const SUBMISSIONS_FAULT_KINDS: readonly FaultKind[] = ['status', 'reset', 'delay'];

/** Longest `body` of a `status` fault. */
export const MAX_FAULT_BODY_LENGTH = 2000;

/** Largest body of an `oversize` fault (`bytes`). */
export const MAX_OVERSIZE_BYTES = 200_000_000;

/** Longest wait of a `delay` fault, and longest late-effect window (`lateEffectMs`). */
export const MAX_DELAY_MS = 600_000;

const faultSpecSchema = z
  .strictObject({
    route: z.enum(['records', 'events', 'submissions']).optional(),
    sourceId: z.string().min(1).optional(),
    date: z.string().min(1).optional(),
    cursor: z.string().min(1).nullable().optional(),
    aggregateId: z.string().min(1).optional(),
    eventId: z.string().min(1).max(200).optional(),
    action: z.enum(SUBMISSION_ACTIONS).optional(),
    reference: z.string().min(1).max(MAX_REFERENCE_LENGTH).optional(),
    phase: z.enum(['before', 'after']).optional(),
    afterRequests: z.int().min(0).optional(),
    times: z.int().min(1).optional(),
    kind: z.enum(['status', 'reset', 'delay', 'truncate', 'malformed', 'schema', 'oversize']),
    status: z.int().min(400).max(599).optional(),
    retryAfter: z.string().min(1).max(200).optional(),
    delayMs: z.int().min(0).max(MAX_DELAY_MS).optional(),
    lateEffectMs: z.int().min(0).max(MAX_DELAY_MS).optional(),
    body: z.string().max(MAX_FAULT_BODY_LENGTH).optional(),
    bytes: z.int().min(1).max(MAX_OVERSIZE_BYTES).optional(),
    contentLength: z.boolean().optional(),
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
  .refine((s) => (s.route ?? 'records') === 'records' || s.body === undefined, {
    message: '"body" is only valid on route "records"',
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
  .refine(
    (s) =>
      (s.route ?? 'records') === 'records' ||
      (s.sourceId === undefined && s.date === undefined && s.cursor === undefined),
    { message: '"sourceId", "date" and "cursor" match records requests only', path: ['route'] },
  )
  .refine((s) => s.route === 'events' || (s.aggregateId === undefined && s.eventId === undefined), {
    message: '"aggregateId" and "eventId" need route "events"',
    path: ['route'],
  })
  .refine((s) => s.route === 'submissions' || (s.action === undefined && s.reference === undefined), {
    message: '"action" and "reference" need route "submissions"',
    path: ['route'],
  })
  .refine((s) => s.route === 'submissions' || s.phase === undefined, {
    message: '"phase" needs route "submissions"',
    path: ['phase'],
  })
  .refine(
    (s) =>
      s.lateEffectMs === undefined ||
      (s.route === 'submissions' && s.kind === 'delay' && (s.phase ?? 'before') === 'before'),
    {
      message: '"lateEffectMs" needs route "submissions", kind "delay" and phase "before"',
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
  /** Only requests for this date (absent = any). Records route only. */
  date?: string;
  /** Only this page: a cursor string, or null for the first page (absent = any page). Records route only. */
  cursor?: string | null;
  /** Only deliveries of events of this aggregate (absent = any). Events route only. */
  aggregateId?: string;
  /** Only deliveries of this event id (absent = any). Events route only. */
  eventId?: string;
  /** Only requests of this action (absent = any). Submissions route only. */
  action?: SubmissionAction;
  /**
   * Only requests about this reference (absent = any): the submitted or looked-up reference, or for
   * confirm/void the target submission's. Submissions route only.
   */
  reference?: string;
  /**
   * Whether the fault hits before the request's effect (default) or after it; `after` is not valid
   * with action `lookup`. Submissions route only.
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
   * Late effects of this `before` delay on the submissions route, overriding the server's
   * `lateEffectMs` (0 = off for this fault). A client that leaves at most this long before the
   * delay ends still gets its request applied when the delay ends (see `FaultKind`).
   */
  lateEffectMs?: number;
  /**
   * Kind `status` on the records route only: the text sent as the error body's `message` (at most
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
}

/** A fault as stored, with its id and live counters. */
export interface ActiveFault extends FaultSpec {
  id: string;
  /** Matching requests seen since the fault was added. */
  seen: number;
  /** Hits left before the fault expires. */
  remaining: number;
}

/** The facts of a records request that faults match on. */
export interface RecordsFaultTarget {
  route: 'records';
  sourceId: string;
  date: string | null;
  /** Raw cursor parameter; null on a first-page request. */
  cursor: string | null;
}

/** The facts of a (well-formed) event delivery that faults match on. */
export interface EventsFaultTarget {
  route: 'events';
  eventId: string;
  aggregateId: string;
}

/** The facts of a (well-formed, known-target) submissions request that faults match on. */
export interface SubmissionsFaultTarget {
  route: 'submissions';
  action: SubmissionAction;
  /** The submitted or looked-up reference; for confirm/void the target submission's. */
  reference: string;
}

/** The request a fault may hit; only faults of the same route ever match it. */
export type FaultTarget = RecordsFaultTarget | EventsFaultTarget | SubmissionsFaultTarget;

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

function targets(fault: ActiveFault, target: FaultTarget): boolean {
  if ((fault.route ?? 'records') !== target.route) return false;
  if (target.route === 'events') {
    return (
      (fault.aggregateId === undefined || fault.aggregateId === target.aggregateId) &&
      (fault.eventId === undefined || fault.eventId === target.eventId)
    );
  }
  if (target.route === 'submissions') {
    return (
      (fault.action === undefined || fault.action === target.action) &&
      (fault.reference === undefined || fault.reference === target.reference)
    );
  }
  return (
    (fault.sourceId === undefined || fault.sourceId === target.sourceId) &&
    (fault.date === undefined || fault.date === target.date) &&
    (fault.cursor === undefined || fault.cursor === target.cursor)
  );
}

/** Programmatic fault injection; the admin API (`/_admin/faults`) drives the same instance. */
export class FaultInjector {
  readonly #faults: ActiveFault[] = [];
  #nextId = 1;

  /** Validates and registers a fault; returns its id (`f1`, `f2`, …). Throws `InvalidFaultSpecError`. */
  add(spec: FaultSpec): string {
    const parsed = parseFaultSpec(spec);
    const id = `f${this.#nextId++}`;
    this.#faults.push({ ...parsed, id, seen: 0, remaining: parsed.times ?? 1 });
    return id;
  }

  /** Removes every fault (ids keep increasing). */
  clear(): void {
    this.#faults.length = 0;
  }

  /** Faults not yet expired, oldest first (copies). */
  list(): ActiveFault[] {
    return this.#faults.map((f) => ({ ...f }));
  }

  /**
   * Decides the fault for one request and consumes it. A fault matches when it is of the target's
   * route and all its matchers fit; other faults neither count nor are consumed by the request.
   * Every matching fault counts the request towards its `afterRequests`; the oldest fault past its
   * skip count fires, loses one of its `times`, and is removed when none are left. Returns
   * undefined when no fault fires.
   */
  take(target: FaultTarget): ActiveFault | undefined {
    let fired: ActiveFault | undefined;
    for (const fault of this.#faults) {
      if (!targets(fault, target)) continue;
      fault.seen++;
      if (!fired && fault.seen > (fault.afterRequests ?? 0)) fired = fault;
    }
    if (!fired) return undefined;
    fired.remaining--;
    if (fired.remaining === 0) this.#faults.splice(this.#faults.indexOf(fired), 1);
    return { ...fired };
  }
}
