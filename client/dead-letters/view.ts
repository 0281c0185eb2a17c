/**
 * Dead letters for operators (R11): a `dead_letter` row — one per run that failed for good,
 * written by activities/run/finish-run.ts — as the CLI and the library show it. The reading and the
 * two things a human may do with an open letter (retry, discard) live beside this file.
 * Nothing here prints a payload: no activity input or result is ever decoded.
 */
import type { AuditEntry, DeadLetter, DeadLetterStatus } from '../../prisma/generated/client.ts';
import type { DurableFetchContext } from '../start-fetch.ts';
import { isUuid } from '../ids.ts';

export type { AuditEntry, DeadLetterStatus };

export { DEAD_LETTER_TARGET } from '../../db/audit.ts';

/** Longest `--reason` kept. */
export const MAX_REASON_LENGTH = 1000;

/** True when `id` has the shape of a dead letter id (a UUID). */
export function isDeadLetterId(id: string): boolean {
  return isUuid(id);
}

/** A dead letter with its business date written `YYYY-MM-DD` and its business key. */
export type DeadLetterView = Omit<DeadLetter, 'businessDate'> & {
  businessDate: string;
  /** `<jobType>:<sourceId>:<date>`: the key every page's idempotency key derives from. */
  businessKey: string;
};

/** What reading a dead letter needs. */
export type PrismaCtx = Pick<DurableFetchContext, 'prisma'>;

/** `YYYY-MM-DD` of a DATE column. */
export function dateText(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** The row as shown: its date as text and its business key. Pure. */
export function view(row: DeadLetter): DeadLetterView {
  const businessDate = dateText(row.businessDate);
  return { ...row, businessDate, businessKey: `${row.jobType}:${row.sourceId}:${businessDate}` };
}
