// The demo partner's webhook side: events an outbox publisher delivers to `POST /events`, applied
// at most once per event id however often they are delivered.

/** An event as delivered to `POST /events` (the outbox row, minus its delivery bookkeeping). */
export interface PartnerEvent {
  /** Event id; also the delivery's `Idempotency-Key`. */
  id: string;
  topic: string;
  aggregateType: string;
  aggregateId: string;
  /** Any JSON value. Kept here only: never written to the ledger. */
  payload: unknown;
  /** ISO timestamp the event was created at (by the sender). */
  createdAt: string;
}

/** An event the partner applied, with when it was applied and how often it was delivered. */
export interface AppliedEvent extends PartnerEvent {
  /** 1-based, increasing in applied order; never reused, also not after `clear()`. */
  appliedSeq: number;
  /** ISO time of the delivery that applied it. */
  appliedAt: string;
  /**
   * Every well-formed delivery of this id the partner received: the one that applied it, the
   * duplicates after it, and those a fault stopped (before or after it was applied).
   */
  deliveries: number;
}

/** Filter of `list`, `deliveries` and `duplicates`; every given field must match. */
export interface EventFilter {
  aggregateId?: string;
  topic?: string;
}

interface Stored extends AppliedEvent {
  /** Deliveries that reached `apply`: 1 + duplicates. */
  accepted: number;
}

function matches(event: Stored, filter: EventFilter): boolean {
  return (
    (filter.aggregateId === undefined || event.aggregateId === filter.aggregateId) &&
    (filter.topic === undefined || event.topic === filter.topic)
  );
}

function copy({ accepted: _accepted, ...event }: Stored): AppliedEvent {
  return { ...event, payload: structuredClone(event.payload) };
}

/**
 * In-memory record of applied events, deduplicated by event id (the first delivery applies, later
 * ones are duplicates; a duplicate's body is not compared with the applied one). Synchronous, so
 * concurrent deliveries of one id apply it exactly once.
 */
export class EventStore {
  /** Applied events by id; a Map iterates in insertion order, i.e. applied order. */
  readonly #applied = new Map<string, Stored>();
  /** Deliveries stopped by a fault, per id not (yet) applied. */
  readonly #unapplied = new Map<string, number>();
  #seq = 0;

  /**
   * Counts one delivery of `event` and applies it unless its id was already applied. Returns
   * `duplicate: false` for the delivery that applied it, `true` afterwards. Stores a copy.
   */
  apply(event: PartnerEvent, now: Date = new Date()): { duplicate: boolean } {
    const applied = this.#applied.get(event.id);
    if (applied) {
      applied.deliveries++;
      applied.accepted++;
      return { duplicate: true };
    }
    const earlier = this.#unapplied.get(event.id) ?? 0;
    this.#unapplied.delete(event.id);
    this.#applied.set(event.id, {
      id: event.id,
      topic: event.topic,
      aggregateType: event.aggregateType,
      aggregateId: event.aggregateId,
      payload: structuredClone(event.payload),
      createdAt: event.createdAt,
      appliedSeq: ++this.#seq,
      appliedAt: now.toISOString(),
      deliveries: earlier + 1,
      accepted: 1,
    });
    return { duplicate: false };
  }

  /**
   * Counts one delivery of event `id` that a fault stopped before `apply` (status, reset, or a delay
   * cut short by the server closing). It adds to that id's `deliveries`, not to the totals.
   */
  countFaulted(id: string): void {
    const applied = this.#applied.get(id);
    if (applied) applied.deliveries++;
    else this.#unapplied.set(id, (this.#unapplied.get(id) ?? 0) + 1);
  }

  /** Applied events matching `filter`, in applied order (copies; mutating them does not alter the store). */
  list(filter: EventFilter = {}): AppliedEvent[] {
    return [...this.#applied.values()].filter((e) => matches(e, filter)).map(copy);
  }

  /**
   * Deliveries that reached `apply` for events matching `filter`: applied events plus duplicates.
   * Deliveries a fault stopped before `apply` are not included (they only count in each event's
   * `deliveries`); a delayed delivery that was then applied or found duplicate is.
   */
  deliveries(filter: EventFilter = {}): number {
    let n = 0;
    for (const event of this.#applied.values()) if (matches(event, filter)) n += event.accepted;
    return n;
  }

  /** Deliveries that reached `apply` for an already applied event matching `filter`. */
  duplicates(filter: EventFilter = {}): number {
    let n = 0;
    for (const event of this.#applied.values()) if (matches(event, filter)) n += event.accepted - 1;
    return n;
  }

  /**
   * Forgets every applied event and delivery count (so a cleared id applies again); `appliedSeq`
   * keeps increasing.
   */
  clear(): void {
    this.#applied.clear();
    this.#unapplied.clear();
  }
}
