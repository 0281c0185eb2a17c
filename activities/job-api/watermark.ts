/**
 * Incremental reads: a source that reads "everything changed since its watermark" instead of a
 * whole business day. The watermark is the highest cursor value (an `updated_at`, an increasing
 * id) the source's runs have durably stored. Pure: the values, their order, and the window a run
 * reads. The engine fixes a run's window before its first partner call (activities/pages/) and
 * moves the watermark in the transaction of the page that carries it (db/pages/page-store.ts).
 * Guide: docs/http-sources.md, "Incremental windows".
 */
import { addDays, startOfDayIn } from '../../contract/business-date.ts';
import type { FixedWindow, StoredWatermark } from '../../db/pages/stored-page.ts';

/** `timestamp`: the cursor value is an instant; `number`: an increasing integer (an id, a sequence). */
export type WatermarkKind = 'timestamp' | 'number';

export const WATERMARK_KINDS: readonly WatermarkKind[] = ['timestamp', 'number'];

/** What makes a job's runs incremental (a job's `watermark` hook returns it for a source). */
export interface WatermarkSpec<R> {
  kind: WatermarkKind;
  /**
   * A record's cursor value: for `timestamp` a Date (or ISO-8601 text with its offset), for
   * `number` an integer (a safe number, a bigint, or decimal digits). Undefined, or anything else,
   * fails the page (`WATERMARK_MISSING`): a record that cannot be placed would be missed by the
   * next window.
   */
  valueOf(record: R): unknown;
  /** Where the first run's window starts (the kind's text, see {@link watermarkText}). */
  start: string;
  /** How far before the watermark a window starts: milliseconds (timestamp) or units (number). */
  lookback: number;
  /**
   * The partner returns a window's records in ascending cursor order: the watermark then moves
   * with every stored page. Otherwise it moves only with a run's last page (a run that fails
   * half-way reads its whole window again next time, and loses nothing).
   */
  ordered: boolean;
}

/**
 * The window one run reads, fixed before its first partner call and kept by every attempt: its
 * lower bound (inclusive, the kind's text), its upper bound (exclusive: when the window was fixed,
 * or the end of an older run's day; null for numbers), and whether the run moves the source's
 * watermark (`head`: not a run of a date older than the watermark's).
 */
export type RunWindow = FixedWindow & { kind: WatermarkKind };

export type { StoredWatermark };

/** ISO-8601 with a date, a time and an offset (`Z` or `±hh:mm`): text without one is ambiguous. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i;
const INTEGER = /^-?\d{1,40}$/;

/**
 * The stored text of a cursor value, or undefined when it is not one of `kind`: a timestamp as
 * `toISOString()` (UTC, milliseconds: finer digits are cut, which only widens a window), a number
 * as its decimal digits.
 */
export function watermarkText(kind: WatermarkKind, value: unknown): string | undefined {
  if (kind === 'timestamp') {
    let ms: number;
    if (value instanceof Date) ms = value.getTime();
    else if (typeof value === 'string' && ISO_INSTANT.test(value.trim()))
      ms = Date.parse(value.trim().replace(' ', 'T'));
    else return undefined;
    return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
  }
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return Number.isSafeInteger(value) ? String(value) : undefined;
  if (typeof value === 'string' && INTEGER.test(value.trim())) return BigInt(value.trim()).toString();
  return undefined;
}

/** Compares two stored values of `kind`: negative, zero or positive. */
export function compareWatermarks(kind: WatermarkKind, a: string, b: string): number {
  if (kind === 'timestamp') return Date.parse(a) - Date.parse(b);
  const d = BigInt(a) - BigInt(b);
  return d === 0n ? 0 : d < 0n ? -1 : 1;
}

/** `value` less `lookback` (ms for a timestamp, units for a number). */
function minus(kind: WatermarkKind, value: string, lookback: number): string {
  if (kind === 'timestamp') return new Date(Date.parse(value) - lookback).toISOString();
  return (BigInt(value) - BigInt(Math.trunc(lookback))).toString();
}

/**
 * The window a run of `businessDate` reads, given the source's watermark (undefined: none yet):
 * - a head run (no watermark, or its date not older than the watermark's): from the watermark
 *   less the lookback (the start, at first) until now; it moves the watermark;
 * - a run of an older date (a backfill, a replay of an older key): its own day, from the day's
 *   start less the lookback until the next day's start — for a number cursor, from the start —
 *   and it never moves the watermark.
 * A watermark of another kind (the source's config changed) counts as none for the window.
 */
export function windowFor(
  spec: Pick<WatermarkSpec<unknown>, 'kind' | 'start' | 'lookback'>,
  watermark: StoredWatermark | undefined,
  run: { businessDate: string; timezone: string },
  now: Date,
): RunWindow {
  const kind = spec.kind;
  const current = watermark?.kind === kind ? watermark : undefined;
  const head = current === undefined || run.businessDate >= current.businessDate;
  if (head) {
    return {
      kind,
      since: current === undefined ? spec.start : minus(kind, current.value, spec.lookback),
      until: kind === 'timestamp' ? now.toISOString() : null,
      head: true,
    };
  }
  if (kind === 'number') return { kind, since: spec.start, until: null, head: false };
  const dayStart = startOfDayIn(run.businessDate, run.timezone).toISOString();
  return {
    kind,
    since: minus(kind, dayStart, spec.lookback),
    until: startOfDayIn(addDays(run.businessDate, 1), run.timezone).toISOString(),
    head: false,
  };
}

/**
 * The highest cursor value of `records` (undefined when there are none), with the first record
 * that has no usable value, if any.
 */
export function highestValue<R>(
  spec: Pick<WatermarkSpec<R>, 'kind' | 'valueOf'>,
  records: readonly R[],
): { highest: string | undefined; missing: number | undefined } {
  let highest: string | undefined;
  for (const [i, record] of records.entries()) {
    let raw: unknown;
    try {
      raw = spec.valueOf(record);
    } catch {
      raw = undefined;
    }
    const text = watermarkText(spec.kind, raw);
    if (text === undefined) return { highest, missing: i };
    if (highest === undefined || compareWatermarks(spec.kind, text, highest) > 0) highest = text;
  }
  return { highest, missing: undefined };
}
