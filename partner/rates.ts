// Pure, deterministic exchange rates of the demo partner: the same date always yields the same
// pairs, in the same order, at the same rates, so a job fetching them can be compared run by run.
import { hash32 } from './records.ts';

/** One rate as `GET /rates` serves it. */
export interface Rate {
  /** `<base><quote>`, e.g. `EURUSD`: unique within a date's list, the `starting_after` cursor. */
  id: string;
  base: string;
  quote: string;
  /** Units of `quote` per unit of `base`: a decimal string with 6 fraction digits (never a float). */
  rate: string;
  date: string;
}

/** Body of `GET /rates`: a Stripe-style list. */
export interface RatesPage {
  object: 'list';
  data: Rate[];
  /** True when items follow the last one in `data`. */
  has_more: boolean;
}

/** Currencies with their value in US dollars, in billionths (integers keep the rates exact). */
const CURRENCIES = [
  ['EUR', 1_080_000_000n],
  ['USD', 1_000_000_000n],
  ['GBP', 1_270_000_000n],
  ['JPY', 6_700_000n],
  ['CHF', 1_130_000_000n],
  ['CAD', 730_000_000n],
  ['AUD', 660_000_000n],
  ['SEK', 95_000_000n],
  ['NOK', 93_000_000n],
  ['DKK', 145_000_000n],
  ['NZD', 600_000_000n],
  ['SGD', 745_000_000n],
  ['HKD', 128_000_000n],
  ['PLN', 250_000_000n],
  ['CZK', 43_000_000n],
  ['MXN', 58_000_000n],
] as const;

/**
 * Every pair the partner knows, in list order: ordered by the later of the two currencies'
 * positions, then base, then quote, so the first n·(n−1) pairs are exactly the pairs of the first
 * n currencies (the default 56 are those of the first 8: EUR, USD, GBP, JPY, CHF, CAD, AUD, SEK).
 */
const PAIRS: readonly (readonly [number, number])[] = CURRENCIES.flatMap((_, b) =>
  CURRENCIES.map((_, q) => [b, q] as const),
)
  .filter(([b, q]) => b !== q)
  .sort(([b1, q1], [b2, q2]) => Math.max(b1, q1) - Math.max(b2, q2) || b1 - b2 || q1 - q2);

/** How many pairs the partner can list for a date (16 currencies: 240). */
export const MAX_RATE_PAIRS = PAIRS.length;

/** Default pair count for a date: the 8 × 7 pairs of the first eight currencies. */
export const DEFAULT_RATE_PAIRS = 56;

/** Default `limit` of `GET /rates`, and its ceiling (as Stripe's lists have). */
export const DEFAULT_RATES_LIMIT = 10;
export const MAX_RATES_LIMIT = 100;

/** A currency's value in billionths of a dollar on `date`: its anchor moved by up to ±2 %. Pure. */
function valueOn(index: number, date: string): bigint {
  const [code, anchor] = CURRENCIES[index] ?? CURRENCIES[0];
  if (code === 'USD') return anchor;
  const ppm = BigInt((hash32(`fx|${code}|${date}`) % 40_001) - 20_000);
  return (anchor * (1_000_000n + ppm)) / 1_000_000n;
}

/** `units` millionths as a decimal string with 6 fraction digits. */
function sixDecimals(units: bigint): string {
  return `${units / 1_000_000n}.${String(units % 1_000_000n).padStart(6, '0')}`;
}

/** The rate of pair number `index` (0-based, list order) on `date`. Pure. */
export function makeRate(index: number, date: string): Rate {
  const [b, q] = PAIRS[index] ?? [0, 1];
  const base = CURRENCIES[b]?.[0] ?? 'EUR';
  const quote = CURRENCIES[q]?.[0] ?? 'USD';
  const [baseValue, quoteValue] = [valueOn(b, date), valueOn(q, date)];
  // Rounded half up to millionths: (base / quote) · 10^6 + 1/2, in integers.
  const units = (baseValue * 2_000_000n + quoteValue) / (2n * quoteValue);
  return { id: `${base}${quote}`, base, quote, rate: sixDecimals(units), date };
}

/** Position (0-based) of the pair with this id among the first `count`, or undefined. Pure. */
export function indexOfRate(id: string, count: number): number | undefined {
  for (let i = 0; i < Math.min(count, MAX_RATE_PAIRS); i++) {
    const [b, q] = PAIRS[i] ?? [0, 0];
    if (`${CURRENCIES[b]?.[0]}${CURRENCIES[q]?.[0]}` === id) return i;
  }
  return undefined;
}

/**
 * The page of `date`'s first `count` pairs starting at position `from` (0-based), at most `limit`
 * items; `has_more` when pairs remain after it. Pure.
 */
export function buildRatesPage(date: string, from: number, limit: number, count: number): RatesPage {
  const total = Math.min(count, MAX_RATE_PAIRS);
  const end = Math.min(total, from + limit);
  const data: Rate[] = [];
  for (let i = from; i < end; i++) data.push(makeRate(i, date));
  return { object: 'list', data, has_more: end < total };
}
