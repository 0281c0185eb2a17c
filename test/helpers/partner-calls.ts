/**
 * The demo partner's ledger read as R8's breaker and retry budget count partner calls: calls in a
 * period, the calls that are retries, and the budget's window at each retry.
 */
import type { LedgerEntry } from '../../partner/ledger.ts';

const atMs = (e: LedgerEntry) => Date.parse(e.at);

/** The entries answered in [from, to) (`to` absent: from `from` on). */
export function answeredBetween(entries: readonly LedgerEntry[], from: Date, to?: Date): LedgerEntry[] {
  return entries.filter((e) => atMs(e) >= from.getTime() && (to === undefined || atMs(e) < to.getTime()));
}

/**
 * Whether each entry (oldest first) is a retry: a request for a page key and cursor the partner
 * was asked before. A retried attempt resumes from its staged cursor, so its first call repeats
 * the failed one; a first attempt's calls each ask a new cursor.
 */
export function retryFlags(entries: readonly LedgerEntry[]): boolean[] {
  const seen = new Set<string>();
  return entries.map((e) => {
    const key = `${e.idempotencyKey ?? ''}\n${e.cursor ?? ''}`;
    const again = seen.has(key);
    seen.add(key);
    return again;
  });
}

/** The retries answered in a stretch of time that ends with one, and the calls the budget weighed them against. */
export interface BudgetWindow {
  at: string;
  retries: number;
  calls: number;
}

/**
 * For each retry among `entries` (oldest first), what the retry budget (`windowMs`) must have
 * bounded, seen from the partner. The budget counts per whole second at admission, a second
 * while it began less than `windowMs` before; the partner records each call up to `answerMs`
 * after its admission. So of the retries answered within `windowMs − 1 s − answerMs` up to this
 * one, the last admitted counted all the others in its window: together they are at most
 * `max(minRetries, ratio × calls)`, where its calls were all answered from `2 × windowMs − 1 s`
 * before this retry to `answerMs` after it (`calls` counts those).
 */
export function budgetWindows(
  entries: readonly LedgerEntry[],
  { windowMs, answerMs }: { windowMs: number; answerMs: number },
): BudgetWindow[] {
  const flags = retryFlags(entries);
  const span = windowMs - 1_000 - answerMs;
  if (span <= 0) throw new RangeError('windowMs must exceed 1 s + answerMs');
  return entries.flatMap((e, i) => {
    if (!flags[i]) return [];
    const end = atMs(e);
    const retries = entries.filter((o, j) => flags[j] && atMs(o) > end - span && atMs(o) <= end).length;
    const calls = entries.filter(
      (o) => atMs(o) > end - 2 * windowMs + 1_000 && atMs(o) <= end + answerMs,
    ).length;
    return [{ at: e.at, retries, calls }];
  });
}
