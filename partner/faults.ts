import { z } from 'zod';

/**
 * What an injected fault does to a matching request:
 * - `status`: respond with `status` (and `Retry-After: retryAfter` when given), body untouched by the app;
 * - `reset`: destroy the socket with a TCP RST, no response;
 * - `delay`: wait `delayMs`, then respond normally (lets clients hit their response timeout);
 * - `truncate`: send headers and half the body, then destroy the socket.
 * On the events route a `status` or `reset` fault leaves the event unapplied; `delay` applies it
 * after the wait. Only these three kinds are valid there.
 */
/** `malformed`: 200 with a body that is not JSON; `schema`: 200 with JSON of the wrong shape. */
export type FaultKind = 'status' | 'reset' | 'delay' | 'truncate' | 'malformed' | 'schema';

/** The route a fault hits: `GET /sources/:sourceId/records` or `POST /events`. */
export type FaultRoute = 'records' | 'events';

/** Fault kinds valid on the events route. */
export const EVENTS_FAULT_KINDS: readonly FaultKind[] = ['status', 'reset', 'delay'];

const faultSpecSchema = z
  .strictObject({
    route: z.enum(['records', 'events']).optional(),
    sourceId: z.string().min(1).optional(),
    date: z.string().min(1).optional(),
    cursor: z.string().min(1).nullable().optional(),
    aggregateId: z.string().min(1).optional(),
    eventId: z.string().min(1).max(200).optional(),
    afterRequests: z.int().min(0).optional(),
    times: z.int().min(1).optional(),
    kind: z.enum(['status', 'reset', 'delay', 'truncate', 'malformed', 'schema']),
    status: z.int().min(400).max(599).optional(),
    retryAfter: z.string().min(1).max(200).optional(),
    delayMs: z.int().min(0).max(600_000).optional(),
  })
  .refine((s) => s.kind !== 'status' || s.status !== undefined, {
    message: 'kind "status" needs a "status" (400..599)',
    path: ['status'],
  })
  .refine((s) => s.kind === 'status' || s.status === undefined, {
    message: '"status" is only valid with kind "status"',
    path: ['status'],
  })
  .refine((s) => s.kind !== 'delay' || s.delayMs !== undefined, {
    message: 'kind "delay" needs a "delayMs"',
    path: ['delayMs'],
  })
  .refine((s) => s.route !== 'events' || EVENTS_FAULT_KINDS.includes(s.kind), {
    message: 'route "events" takes only kinds "status", "reset" and "delay"',
    path: ['kind'],
  })
  .refine(
    (s) =>
      s.route !== 'events' || (s.sourceId === undefined && s.date === undefined && s.cursor === undefined),
    { message: '"sourceId", "date" and "cursor" match records requests only', path: ['route'] },
  )
  .refine((s) => s.route === 'events' || (s.aggregateId === undefined && s.eventId === undefined), {
    message: '"aggregateId" and "eventId" need route "events"',
    path: ['route'],
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

/** The request a fault may hit; only faults of the same route ever match it. */
export type FaultTarget = RecordsFaultTarget | EventsFaultTarget;

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
