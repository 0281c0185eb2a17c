/** `dlq retry --override key=value`: what a retry may change about the run started again. */
import { UserFacingError } from '../../runtime/errors.ts';
import { MAX_PAGE_SIZE, MAX_PAGES_PER_EXECUTION } from '../../contract/input-limits.ts';

/** What `dlq retry --override key=value` may change about the run started again. */
export interface RetryOverrides {
  /** Records per stored page, 1..1000. */
  pageSize?: number;
  /** Pages per workflow execution before it continues as new, 1..1000. */
  pagesPerExecution?: number;
}

/** The keys `--override` accepts. */
export const OVERRIDE_KEYS = ['pageSize', 'pagesPerExecution'] as const;
const MAX_OVERRIDE: Record<(typeof OVERRIDE_KEYS)[number], number> = {
  pageSize: MAX_PAGE_SIZE,
  pagesPerExecution: MAX_PAGES_PER_EXECUTION,
};

function isOverrideKey(key: string): key is (typeof OVERRIDE_KEYS)[number] {
  return (OVERRIDE_KEYS as readonly string[]).includes(key);
}

function unknownOverride(key: string): UserFacingError {
  return new UserFacingError(
    `unknown override '${key}': allowed keys are ${OVERRIDE_KEYS.join(', ')}`,
    'INVALID_INPUT',
  );
}

function checkOverrideValue(key: (typeof OVERRIDE_KEYS)[number], value: unknown): number {
  const max = MAX_OVERRIDE[key];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new UserFacingError(
      `invalid override ${key}=${String(value)}: expected an integer 1..${max}`,
      'INVALID_INPUT',
    );
  }
  return value;
}

/**
 * Parses `key=value` pairs (`--override`, repeatable) into overrides.
 * @throws UserFacingError INVALID_INPUT naming the allowed keys (unknown key, malformed pair) or
 *   the allowed range (bad value, a key given twice).
 */
export function parseOverrides(pairs: readonly string[]): RetryOverrides {
  const overrides: RetryOverrides = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) {
      throw new UserFacingError(
        `invalid override '${pair}': expected key=value with key one of ${OVERRIDE_KEYS.join(', ')}`,
        'INVALID_INPUT',
      );
    }
    const key = pair.slice(0, eq).trim();
    const text = pair.slice(eq + 1).trim();
    if (!isOverrideKey(key)) throw unknownOverride(key);
    if (overrides[key] !== undefined) {
      throw new UserFacingError(`override ${key} is given more than once`, 'INVALID_INPUT');
    }
    overrides[key] = checkOverrideValue(key, /^\d{1,7}$/.test(text) ? Number(text) : text);
  }
  return overrides;
}

/** Checks overrides given through the API (as {@link parseOverrides} does for text). */
export function checkOverrides(overrides: RetryOverrides): RetryOverrides {
  const checked: RetryOverrides = {};
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    if (!isOverrideKey(key)) throw unknownOverride(key);
    checked[key] = checkOverrideValue(key, value);
  }
  return checked;
}
