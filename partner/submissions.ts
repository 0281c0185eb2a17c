// The demo partner's non-idempotent side: submissions a client creates with `POST /submissions`
// (every call a new one), then confirms or voids (the compensation). Nothing deduplicates a repeated
// submit, so a client that retries blindly after a lost answer creates a second submission.

/** Longest `reference` a submission accepts. */
export const MAX_REFERENCE_LENGTH = 200;

/** What a request on the submissions routes does: create, confirm, void, or look up by reference. */
export type SubmissionAction = 'submit' | 'confirm' | 'void' | 'lookup';

/** Every `SubmissionAction`, e.g. for validation. */
export const SUBMISSION_ACTIONS = [
  'submit',
  'confirm',
  'void',
  'lookup',
] as const satisfies readonly SubmissionAction[];

/** Lifecycle of a submission: `submitted` → `confirmed`, and `submitted`/`confirmed` → `voided` (final). */
export type SubmissionStatus = 'submitted' | 'confirmed' | 'voided';

/** A submission as the partner holds it; timestamps are ISO strings. */
export interface Submission {
  /** `sub_<n>`, n increasing from 1 per store; never reused, also not after `clear()`. */
  id: string;
  /** The client's reference (1..200 chars); several submissions may share one. */
  reference: string;
  status: SubmissionStatus;
  /** Any JSON value the client sent along; absent when none was sent. */
  summary?: unknown;
  createdAt: string;
  /** Set once, by the confirm that changed the status. */
  confirmedAt?: string;
  /** Set once, by the void that changed the status. */
  voidedAt?: string;
}

/** Result of `confirm`/`voidSubmission` on a known id. */
export interface SubmissionChange {
  /** The submission after the call (a copy). */
  submission: Submission;
  /** True when this call changed the status (the effect); false for a repeat or a refused call. */
  changed: boolean;
}

function copy(submission: Submission): Submission {
  return 'summary' in submission
    ? { ...submission, summary: structuredClone(submission.summary) }
    : { ...submission };
}

/**
 * In-memory store of submissions, in creation order. Synchronous, so concurrent requests on one id
 * change it at most once. Hands out copies: mutating them does not alter the store.
 */
export class SubmissionStore {
  /** By id; a Map iterates in insertion order, i.e. creation order. */
  readonly #byId = new Map<string, Submission>();
  #nextId = 1;

  /**
   * Creates a new submission (status `submitted`) and returns it; never deduplicates. Stores a copy
   * of `summary` (`undefined` = none). Throws `RangeError` for a reference outside 1..200 chars.
   */
  create(reference: string, summary?: unknown, now: Date = new Date()): Submission {
    if (reference.length < 1 || reference.length > MAX_REFERENCE_LENGTH) {
      throw new RangeError(`reference must be 1..${MAX_REFERENCE_LENGTH} chars, got ${reference.length}`);
    }
    const submission: Submission = {
      id: `sub_${this.#nextId++}`,
      reference,
      status: 'submitted',
      ...(summary === undefined ? {} : { summary: structuredClone(summary) }),
      createdAt: now.toISOString(),
    };
    this.#byId.set(submission.id, submission);
    return copy(submission);
  }

  /**
   * Confirms submission `id`: a `submitted` one becomes `confirmed` (`changed: true`); a confirmed
   * one is returned as is (idempotent by id); a voided one is left voided (`changed: false`, the
   * caller answers the conflict). Returns undefined for an unknown id.
   */
  confirm(id: string, now: Date = new Date()): SubmissionChange | undefined {
    const stored = this.#byId.get(id);
    if (!stored) return undefined;
    const changed = stored.status === 'submitted';
    if (changed) {
      stored.status = 'confirmed';
      stored.confirmedAt = now.toISOString();
    }
    return { submission: copy(stored), changed };
  }

  /**
   * Voids submission `id` (the compensation), whether submitted or confirmed (`changed: true`); an
   * already voided one is returned as is (idempotent, no second effect). Returns undefined for an
   * unknown id.
   */
  voidSubmission(id: string, now: Date = new Date()): SubmissionChange | undefined {
    const stored = this.#byId.get(id);
    if (!stored) return undefined;
    const changed = stored.status !== 'voided';
    if (changed) {
      stored.status = 'voided';
      stored.voidedAt = now.toISOString();
    }
    return { submission: copy(stored), changed };
  }

  /** The submission with this id (a copy), or undefined. */
  get(id: string): Submission | undefined {
    const stored = this.#byId.get(id);
    return stored && copy(stored);
  }

  /** Every submission with this reference, any status, oldest first (copies). */
  byReference(reference: string): Submission[] {
    return this.list().filter((s) => s.reference === reference);
  }

  /** Every submission, oldest first (copies). */
  list(): Submission[] {
    return [...this.#byId.values()].map(copy);
  }

  /** Submissions not voided (with this reference, when given), oldest first (copies). */
  live(reference?: string): Submission[] {
    return this.list().filter(
      (s) => s.status !== 'voided' && (reference === undefined || s.reference === reference),
    );
  }

  /** Forgets every submission and returns how many there were; ids keep increasing. */
  clear(): number {
    const cleared = this.#byId.size;
    this.#byId.clear();
    return cleared;
  }
}
