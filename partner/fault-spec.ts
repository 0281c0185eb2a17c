// The fault spec `POST /_admin/faults` and `FaultInjector.add` take (validated by fault-spec-schema.ts).
import { z } from 'zod';
import type { CatalogStyle } from './catalog.ts';
import type { FaultKind, FaultPhase, FaultRoute } from './fault-kinds.ts';
import { faultSpecSchema } from './fault-spec-schema.ts';
import type { JournalAction } from './journal.ts';
import type { SubmissionAction } from './submissions.ts';

/** A fault to inject, as accepted by `POST /_admin/faults` and `FaultInjector.add`. */
export interface FaultSpec {
  /** Route the fault hits; absent = `records`. A fault never hits the other route. */
  route?: FaultRoute;
  /** Only requests for this source (absent = any). Records route only. */
  sourceId?: string;
  /** Only requests for this date (absent = any). Records, rates and catalog routes only. */
  date?: string;
  /** Only this page: a cursor string, or null for the first page (absent = any page). Records route only. */
  cursor?: string | null;
  /** Only this rates page: a `starting_after` id, or null for the first page (absent = any). Rates route only. */
  startingAfter?: string | null;
  /** Only catalog requests of this pagination style (absent = any). Catalog route only. */
  style?: CatalogStyle;
  /**
   * Only this catalog page: the raw paging value sent (`cursor`, `page_token`, `after`, `page`,
   * `offset`, or the search body's `cursor`), or null for a first page (absent = any page); a
   * `none` request's is always null. Catalog route only.
   */
  position?: string | null;
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
  /**
   * Kind `status` on the read routes only: send `X-RateLimit-Remaining: 0` and `X-RateLimit-Reset`,
   * the limit resetting this many whole seconds from now (≥ 0), written as `rateLimitResetStyle` says.
   */
  rateLimitReset?: number;
  /**
   * How `X-RateLimit-Reset` writes the reset: `epoch` (default, GitHub's way) the epoch second it
   * happens, rounded up; `seconds` the number of seconds from now. Needs `rateLimitReset`.
   */
  rateLimitResetStyle?: 'epoch' | 'seconds';
  /**
   * Kind `off_origin`: the origin the next link is moved to (`http(s)://host[:port]`, no path),
   * e.g. another server a test watches.
   */
  url?: string;
  /** Wait before responding, for kind `delay`; for kind `status` on the read routes, a slow error. */
  delayMs?: number;
  /**
   * Late effects of this `before` delay on an effect route, overriding the server's
   * `lateEffectMs` (0 = off for this fault). A client that leaves at most this long before the
   * delay ends still gets its request applied when the delay ends (see `FaultKind`).
   */
  lateEffectMs?: number;
  /**
   * Kind `status` on the read routes (records, rates, catalog) only: the text sent as the error body's `message` (at most
   * `MAX_FAULT_BODY_LENGTH` characters) instead of `injected status <n>`.
   */
  body?: string;
  /**
   * Kind `page` (read routes only): the JSON value served as the 200 body instead of the route's
   * answer (at most `MAX_PAGE_FAULT_BYTES` of JSON).
   */
  page?: unknown;
  /** Kind `oversize`: the body's size in bytes (1..`MAX_OVERSIZE_BYTES`). */
  bytes?: number;
  /**
   * Kind `oversize`: announce the size in a `Content-Length` header (default false: chunked, so a
   * client can only find out by counting what it reads).
   */
  contentLength?: boolean;
  /** Kind `overfull`: how many items beyond `limit` the page carries (1..`MAX_EXTRA_ITEMS`, default 1). */
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
