/** `--since` of `dlq list` and `dlq replay`: a date, an ISO time or an age. */
import { UserFacingError } from '../../runtime/errors.ts';
import { isBusinessDate } from '../../contract/business-key.ts';

const DURATION_UNITS_MS: Record<string, number> = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};
const ISO_TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Parses `--since`: a date `YYYY-MM-DD` (its UTC midnight), an ISO time with an offset
 * (`2026-11-29T12:00:00Z`), or a duration back from `now` (`90m`, `2h`, `3d`, `1w`).
 * @throws UserFacingError INVALID_INPUT.
 */
export function parseSince(text: string, now: Date = new Date()): Date {
  const value = text.trim();
  const duration = /^(\d{1,6})([smhdw])$/.exec(value);
  if (duration) {
    return new Date(now.getTime() - Number(duration[1]) * (DURATION_UNITS_MS[duration[2]!] ?? 0));
  }
  if (isBusinessDate(value)) return new Date(`${value}T00:00:00Z`);
  if (ISO_TIME_RE.test(value)) {
    const ms = Date.parse(value);
    if (!Number.isNaN(ms)) return new Date(ms);
  }
  throw new UserFacingError(
    `invalid --since '${text}': expected YYYY-MM-DD, an ISO time like 2026-11-29T12:00:00Z, or a duration like 2h or 3d`,
    'INVALID_INPUT',
  );
}
