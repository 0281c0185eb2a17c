/** `dlq list`: dead letters by source, job type, error type, time and status. */
import type { DeadLetterStatus } from '../../prisma/generated/client.ts';
import { listDeadLetterRows } from '../../db/listings.ts';
import { type ReadContext, readerOf } from '../../db/sql-reader.ts';
import { type DeadLetterView, view } from './view.ts';

export interface ListDeadLettersFilter {
  /** Only letters of this job type, e.g. `exchange-rates`. */
  jobType?: string;
  sourceId?: string;
  /** Error type (contract/error-types.ts), e.g. `InvalidInput`. */
  errorType?: string;
  /** Only letters written at or after this time. */
  since?: Date;
  /** Default `open`; `all` for every status. */
  status?: DeadLetterStatus | 'all';
  /** Newest first; default 50, at most 1000. */
  limit?: number;
}

/**
 * Dead letters, newest first. Read-only. Reads through the app's PrismaClient or any reader (the
 * CLI's, db/sql-reader.ts); the letters are the same either way.
 */
export async function listDeadLetters(
  ctx: ReadContext,
  filter: ListDeadLettersFilter = {},
): Promise<DeadLetterView[]> {
  const status = filter.status ?? 'open';
  const rows = await listDeadLetterRows(readerOf(ctx), {
    ...filter,
    status: status === 'all' ? undefined : status,
  });
  return rows.map(view);
}
