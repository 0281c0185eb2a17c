/**
 * Argument and option parsers shared by the `durable-fetch dlq` subcommands: each turns bad input
 * into one line (UserFacingError INVALID_INPUT) before anything touches the database.
 */
import { DeadLetterStatus } from '../../../prisma/generated/enums.ts';
import { UserFacingError } from '../../../runtime/errors.ts';
import { isDeadLetterId } from '../../../client/dead-letters/view.ts';

/** The values `dlq list --status` accepts: every dead letter status, and `all`. */
export const STATUSES: string[] = [...Object.values(DeadLetterStatus), 'all'];

/** `--status`: one line on bad input. */
export function parseStatus(value: string | undefined): DeadLetterStatus | 'all' | undefined {
  if (value === undefined) return undefined;
  if (!STATUSES.includes(value)) {
    throw new UserFacingError(
      `invalid --status '${value}': expected one of ${STATUSES.join(', ')}`,
      'INVALID_INPUT',
    );
  }
  return value as DeadLetterStatus | 'all';
}

/** `--limit`: an integer 1..1000, one line on bad input. */
export function parseLimit(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d{1,4}$/.test(value) ? Number(value) : NaN;
  if (!(n >= 1 && n <= 1000)) {
    throw new UserFacingError(`invalid --limit '${value}': expected an integer 1..1000`, 'INVALID_INPUT');
  }
  return n;
}

/** A dead letter id argument, lower-cased, or a one-line user error. */
export function deadLetterId(value: string): string {
  if (!isDeadLetterId(value)) {
    throw new UserFacingError(`'${value}' is not a dead letter id (a UUID)`, 'INVALID_INPUT');
  }
  return value.toLowerCase();
}

/** Commander's accumulator for a repeatable option (`--override a=1 --override b=2`). */
export const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];
