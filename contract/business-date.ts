/**
 * Which business dates a run may be started for. Pure: the caller passes the clock reading.
 */
import { isBusinessDate } from './business-key.ts';

/**
 * Today's calendar date `YYYY-MM-DD` in `timeZone` at instant `now`. Built from the formatter's
 * parts, not a locale's layout (which ICU versions have changed): workflow code relies on it.
 * @throws RangeError for an unknown timezone.
 */
export function dateInTimeZone(now: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).formatToParts(now);
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return `${part('year')}-${part('month')}-${part('day')}`;
}

/** Milliseconds `timeZone` is ahead of UTC at instant `at` (whole seconds). */
function zoneOffsetMs(at: Date, timeZone: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(at)
      .map((p) => [p.type, p.value]),
  ) as Record<string, string>;
  const local = Date.UTC(
    +parts.year!,
    +parts.month! - 1,
    +parts.day!,
    +parts.hour!,
    +parts.minute!,
    +parts.second!,
  );
  return local - Math.floor(at.getTime() / 1000) * 1000;
}

/**
 * The first instant of calendar date `YYYY-MM-DD` in `timeZone`: local midnight, or — where a DST
 * change skips midnight (e.g. America/Santiago) — the moment the day starts. Pure.
 */
export function startOfDayIn(date: string, timeZone: string): Date {
  const midnightUtc = Date.parse(`${date}T00:00:00Z`);
  const first = midnightUtc - zoneOffsetMs(new Date(midnightUtc), timeZone);
  // Once more with the offset in force at that instant (a DST change between the two).
  const second = midnightUtc - zoneOffsetMs(new Date(first), timeZone);
  const candidates = [second, first].filter((t) => dateInTimeZone(new Date(t), timeZone) === date);
  return new Date(candidates.length > 0 ? Math.min(...candidates) : second);
}

/** Adds `days` to a `YYYY-MM-DD` date. */
export function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

export type DateCheck = { ok: true } | { ok: false; reason: string };

/**
 * The future-date policy: a business date may be at most `maxFutureDays` after today in the
 * source's timezone (default policy 0: partners have no data for tomorrow yet).
 */
export function checkBusinessDate(
  date: string,
  opts: { now: Date; timeZone: string; maxFutureDays: number },
): DateCheck {
  if (!isBusinessDate(date)) return { ok: false, reason: `invalid date '${date}': expected YYYY-MM-DD` };
  const latest = addDays(dateInTimeZone(opts.now, opts.timeZone), opts.maxFutureDays);
  if (date > latest) {
    return {
      ok: false,
      reason: `date ${date} is in the future: the latest allowed is ${latest} (${opts.timeZone}, max ${opts.maxFutureDays} day(s) ahead)`,
    };
  }
  return { ok: true };
}
