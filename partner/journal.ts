// The demo partner's second non-idempotent downstream: journal entries a client posts with
// `POST /journal-entries` (every call a new one) and can only undo by voiding. There is no confirm
// step: posting is final, so a client that retries blindly after a lost answer books twice.

/** Longest `account` of a journal line (a `reference` has the submissions' limit, `MAX_REFERENCE_LENGTH`). */
export const MAX_ACCOUNT_LENGTH = 200;

/** Most lines one journal entry may have. */
export const MAX_JOURNAL_LINES = 100;

/** Fraction digits an amount may carry; balances are summed exactly at this scale. */
export const AMOUNT_SCALE = 6;

/** A signed decimal string with at most {@link AMOUNT_SCALE} fraction digits, e.g. "-12.50". */
export const AMOUNT_PATTERN = /^-?\d{1,15}(\.\d{1,6})?$/;

/** What a request on the journal routes does: post, void, or look up by reference. */
export type JournalAction = 'post' | 'void' | 'lookup';

/** Every `JournalAction`, e.g. for validation. */
export const JOURNAL_ACTIONS = ['post', 'void', 'lookup'] as const satisfies readonly JournalAction[];

/** One line of an entry: an account and a signed amount (a decimal string, never a float). */
export interface JournalLine {
  account: string;
  amount: string;
}

/** A journal entry as the partner serves it: `posted` → `voided` (final). */
export interface JournalEntry {
  /** `je_<n>`, n increasing from 1 per store; never reused, also not after `clear()`. */
  id: string;
  /** The client's reference; several entries may share one (nothing deduplicates). */
  reference: string;
  status: 'posted' | 'voided';
  lines: JournalLine[];
}

/** One change the store made: a post (an entry created) or a void that changed a status. */
export interface JournalEffect {
  /** 1-based, increasing per store; not reset by `clear()`. */
  seq: number;
  at: string;
  action: 'post' | 'void';
  entryId: string;
  reference: string;
}

/** Result of `voidEntry` on a known id. */
export interface JournalChange {
  entry: JournalEntry;
  /** True when this call voided the entry; false when it already was voided (a repeat). */
  changed: boolean;
}

/** Amount as an integer count of 10^-6 units, so sums are exact. Pure; `amount` must match the pattern. */
export function amountUnits(amount: string): bigint {
  const negative = amount.startsWith('-');
  const [whole = '0', fraction = ''] = (negative ? amount.slice(1) : amount).split('.');
  const units = BigInt(whole) * 10n ** BigInt(AMOUNT_SCALE) + BigInt(fraction.padEnd(AMOUNT_SCALE, '0'));
  return negative ? -units : units;
}

/** True when the amounts of `lines` sum to exactly zero. Pure. */
export function isBalanced(lines: readonly JournalLine[]): boolean {
  return lines.reduce((sum, line) => sum + amountUnits(line.amount), 0n) === 0n;
}

function copy(entry: JournalEntry): JournalEntry {
  return { ...entry, lines: entry.lines.map((line) => ({ ...line })) };
}

/**
 * In-memory store of journal entries, in posting order, with the ledger of effects it made.
 * Synchronous, so concurrent voids of one id change it once. Validation (reference, balance) is
 * the route's job. Hands out copies: mutating them does not alter the store.
 */
export class JournalStore {
  readonly #byId = new Map<string, JournalEntry>();
  readonly #effects: JournalEffect[] = [];
  #nextId = 1;
  #nextSeq = 1;

  #effect(action: JournalEffect['action'], entry: JournalEntry, now: Date): void {
    const at = now.toISOString();
    this.#effects.push({ seq: this.#nextSeq++, at, action, entryId: entry.id, reference: entry.reference });
  }

  /** Posts a NEW entry (status `posted`) and returns it; never deduplicates. Records a `post` effect. */
  post(reference: string, lines: readonly JournalLine[], now: Date = new Date()): JournalEntry {
    const entry: JournalEntry = {
      id: `je_${this.#nextId++}`,
      reference,
      status: 'posted',
      lines: lines.map(({ account, amount }) => ({ account, amount })),
    };
    this.#byId.set(entry.id, entry);
    this.#effect('post', entry, now);
    return copy(entry);
  }

  /**
   * Voids entry `id` (`changed: true`, a `void` effect); a voided one is returned unchanged (repeat
   * safe, no second effect). Returns undefined for an unknown id.
   */
  voidEntry(id: string, now: Date = new Date()): JournalChange | undefined {
    const stored = this.#byId.get(id);
    if (!stored) return undefined;
    const changed = stored.status === 'posted';
    if (changed) {
      stored.status = 'voided';
      this.#effect('void', stored, now);
    }
    return { entry: copy(stored), changed };
  }

  /** The entry with this id (a copy), or undefined. */
  get(id: string): JournalEntry | undefined {
    const stored = this.#byId.get(id);
    return stored && copy(stored);
  }

  /** Entries (with this reference, when given), any status, oldest first (copies). */
  list(reference?: string): JournalEntry[] {
    return [...this.#byId.values()]
      .filter((e) => reference === undefined || e.reference === reference)
      .map(copy);
  }

  /** Effects (on entries of this reference, when given), oldest first (copies). */
  effects(reference?: string): JournalEffect[] {
    return this.#effects
      .filter((e) => reference === undefined || e.reference === reference)
      .map((e) => ({ ...e }));
  }

  /** Forgets every entry and effect; returns how many entries there were. Ids keep increasing. */
  clear(): number {
    const cleared = this.#byId.size;
    this.#byId.clear();
    this.#effects.length = 0;
    return cleared;
  }
}
