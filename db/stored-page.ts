/**
 * A page the run's current claim stored already, as `fetchPage` gives it back to an execution
 * that asks for it again: a Web UI Reset to a continued-as-new execution, or to a workflow task
 * before the page's store, goes on with the same lease token from an earlier point of the history
 * than the database has reached (R1, R3).
 */
import type { PrismaClient } from '../prisma/generated/client.ts';
import { heldBy, type PageFence } from './fence.ts';

/** What fetchPage returns for a stored page: its stored record count and the partner's next cursor. */
export interface StoredPage {
  recordCount: number;
  nextCursor: string | null;
}

/**
 * The page `fence.pageNo` (idempotency key `key`) when the fence holds the run and the run is past
 * that page: from the page's idempotency record, which keeps the next cursor since it was
 * written, or — for the run's last stored page — from the run's own cursor. Undefined when the
 * run is not past the page, is not held by the fence, or the page's cursor is not known (a record
 * written before it kept the cursor, or expired). Read-only.
 */
export async function findStoredPageOfClaim(
  db: Pick<PrismaClient, '$queryRaw'>,
  key: string,
  fence: PageFence,
): Promise<StoredPage | undefined> {
  const [row] = await db.$queryRaw<{ pages_stored: number; cursor: string | null; result: unknown }[]>`
    SELECT r.pages_stored, r.cursor, i.result
      FROM fetch_run r LEFT JOIN idempotency_record i ON i.key = ${key}
     WHERE ${heldBy(fence, 'r')} AND r.pages_stored > ${fence.pageNo}`;
  if (!row) return undefined;
  const result = row.result as { recordCount?: unknown; nextCursor?: unknown } | null;
  if (typeof result?.recordCount !== 'number') return undefined;
  const { recordCount } = result;
  if (typeof result.nextCursor === 'string' || result.nextCursor === null) {
    return { recordCount, nextCursor: result.nextCursor };
  }
  if (row.pages_stored === fence.pageNo + 1) return { recordCount, nextCursor: row.cursor };
  return undefined;
}
