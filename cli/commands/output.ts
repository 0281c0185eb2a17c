import { InvalidArgumentError } from 'commander';
import type { AuditEntry } from '../../prisma/generated/client.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import { isJobType } from '../../contract/business-key.ts';
import { table } from '../../client/format.ts';

/** Prints a value as pretty JSON on stdout (dates as ISO strings, bigints as strings). */
export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2));
}

/** Parses `--limit <n>`: an integer 1..1000, or commander's one-line usage error. */
export function parseLimit(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1000)
    throw new InvalidArgumentError('expected an integer 1..1000');
  return n;
}

/**
 * Parses `--job <type>`: the shape of a job type (lower-case letters, digits, '-'). Not checked
 * against this process's job list: rows written by a job no longer deployed must stay listable.
 * @throws UserFacingError INVALID_INPUT (one line, exit 1, like the other bad inputs of these commands).
 */
export function parseJobType(value: string): string {
  if (!isJobType(value)) {
    throw new UserFacingError(
      `invalid --job '${value}': expected a job type: lower-case letters, digits and '-', e.g. fetch-records`,
      'INVALID_INPUT',
    );
  }
  return value;
}

/** Prints `audit trail:` and a table of `entries` (at, actor, action, reason), or `audit trail: none`. */
export function printAuditTrail(entries: readonly AuditEntry[]): void {
  if (entries.length === 0) return console.log('audit trail: none');
  console.log('audit trail:');
  console.log(
    table(
      entries.map((a) => ({
        at: a.at.toISOString(),
        actor: a.actor,
        action: a.action,
        reason: a.reason ?? '',
      })),
      ['at', 'actor', 'action', 'reason'],
    ),
  );
}
