// Fault injection at run time: which registered fault hits a request, and its counters.
import { type CatalogStyle, LINKED_STYLES, PAGED_STYLES } from './catalog.ts';
import type { FaultSpec } from './fault-spec.ts';
import { parseFaultSpec } from './fault-spec.ts';
import type { JournalAction } from './journal.ts';
import type { SubmissionAction } from './submissions.ts';

export type { FaultSpec } from './fault-spec.ts';

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

/** The facts of a rates request that faults match on. */
export interface RatesFaultTarget {
  route: 'rates';
  date: string | null;
  /** Raw `starting_after` parameter; null on a first-page request. */
  startingAfter: string | null;
}

/** The facts of a catalog request (past its credential check) that faults match on. */
export interface CatalogFaultTarget {
  route: 'catalog';
  style: CatalogStyle;
  date: string | null;
  /** The raw paging value sent (see `FaultSpec.position`); null on a first page and always on `none`. */
  position: string | null;
}

/** The facts of a (well-formed, known-target) journal request that faults match on. */
export interface JournalFaultTarget {
  route: 'journal';
  action: JournalAction;
  /** The posted or looked-up reference; for a void the target entry's. */
  reference: string;
}

/** The facts of a request on an effect route (submissions, journal) that faults match on. */
export type EffectFaultTarget = SubmissionsFaultTarget | JournalFaultTarget;

/** The request a fault may hit; only faults of the same route ever match it. */
export type FaultTarget =
  RecordsFaultTarget | EventsFaultTarget | RatesFaultTarget | CatalogFaultTarget | EffectFaultTarget;

/** Whether a catalog style is one `kind` can change (so a fault without a style waits for one). */
function changes(kind: FaultSpec['kind'], style: CatalogStyle): boolean {
  if (kind === 'loop') return PAGED_STYLES.includes(style);
  if (kind === 'off_origin') return LINKED_STYLES.includes(style);
  return true;
}

function targets(fault: ActiveFault, target: FaultTarget): boolean {
  if ((fault.route ?? 'records') !== target.route) return false;
  if (target.route === 'events') {
    return (
      (fault.aggregateId === undefined || fault.aggregateId === target.aggregateId) &&
      (fault.eventId === undefined || fault.eventId === target.eventId)
    );
  }
  if (target.route === 'submissions' || target.route === 'journal') {
    return (
      (fault.action === undefined || fault.action === target.action) &&
      (fault.reference === undefined || fault.reference === target.reference)
    );
  }
  if (target.route === 'catalog') {
    return (
      (fault.style === undefined || fault.style === target.style) &&
      changes(fault.kind, target.style) &&
      (fault.date === undefined || fault.date === target.date) &&
      (fault.position === undefined || fault.position === target.position)
    );
  }
  if (target.route === 'rates') {
    return (
      (fault.date === undefined || fault.date === target.date) &&
      (fault.startingAfter === undefined || fault.startingAfter === target.startingAfter)
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

  /** Removes the fault `id` (a test ending a hold); false when it is gone already. */
  remove(id: string): boolean {
    const at = this.#faults.findIndex((f) => f.id === id);
    if (at >= 0) this.#faults.splice(at, 1);
    return at >= 0;
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
