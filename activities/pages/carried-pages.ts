/**
 * Partner responses larger than the room left in a stored page: the first records fill the page,
 * the rest is staged at once as the pages after it ("carried" pages), so the partner is never
 * asked for the same response again to take the rest. Pure: what to stage, and the cursors that
 * tie the pages together.
 *
 * A carried page starts at an engine-made cursor, {@link carryCursor}, which the page before it
 * ends at: the workflow hands it to the next fetchPage as any cursor, and that fetchPage finds the
 * carried page staged under it. It names the page and the partner cursor the response continues
 * at, so it is unique within a run, deterministic (a retried staging makes the same one), and
 * short whatever the partner's cursor (the workflow's history keeps it).
 */
import { createHash } from 'node:crypto';

/** A page staged from a response's overflow, for the page `pageNo`. */
export interface CarriedPage {
  pageNo: number;
  /** The carry cursor the page before it ends at. */
  startCursor: string;
  /** The next carry cursor, or the partner's next cursor on the last carried page. */
  cursor: string | null;
  /** The last carried page of a response with no next cursor: the run's end. */
  complete: boolean;
  records: readonly unknown[];
}

/** A response spread over the page being fetched and the pages after it. */
export interface SpreadResponse {
  /** The records that go to the page being fetched (at most its room). */
  records: readonly unknown[];
  /** Where the page being fetched continues: the partner's cursor, or the first carry cursor. */
  cursor: string | null;
  complete: boolean;
  /** The pages after it, in order, each at most `pageSize` records; empty when all fit. */
  carried: CarriedPage[];
}

const PREFIX = 'durable-fetch:carried:page:';
const CARRY_RE = /^durable-fetch:carried:page:(\d{1,15}):(?:[A-Za-z0-9_-]{43}|end)$/;

/**
 * The cursor the carried page `pageNo` starts at, for a response whose partner cursor is
 * `partnerCursor`: the page and the cursor's digest (`end` when the partner has no more). A digest,
 * not the cursor: a partner cursor may be up to MAX_CURSOR_LENGTH long, and this one must fit the
 * same bound. Pure and deterministic.
 */
export function carryCursor(partnerCursor: string | null, pageNo: number): string {
  const of = partnerCursor === null ? 'end' : createHash('sha256').update(partnerCursor).digest('base64url');
  return `${PREFIX}${pageNo}:${of}`;
}

/** The page a carry cursor starts, or undefined for any other cursor (a partner's). */
export function carriedPageOf(cursor: string | null): number | undefined {
  if (cursor === null) return undefined;
  const match = CARRY_RE.exec(cursor);
  return match ? Number(match[1]) : undefined;
}

/**
 * Spreads a partner response over the page `pageNo` (with `room` records left of `pageSize`) and
 * as many pages after it as its overflow needs. A response that fits is the page's append as
 * before: the partner's cursor, complete when it is null.
 */
export function spreadResponse(
  page: { records: readonly unknown[]; nextCursor: string | null },
  room: number,
  pageSize: number,
  pageNo: number,
): SpreadResponse {
  const { records, nextCursor } = page;
  if (records.length <= room)
    return { records, cursor: nextCursor, complete: nextCursor === null, carried: [] };
  const carried: CarriedPage[] = [];
  for (let from = room; from < records.length; from += pageSize) {
    const n = pageNo + 1 + carried.length;
    const last = from + pageSize >= records.length;
    carried.push({
      pageNo: n,
      startCursor: carryCursor(nextCursor, n),
      cursor: last ? nextCursor : carryCursor(nextCursor, n + 1),
      complete: last && nextCursor === null,
      records: records.slice(from, from + pageSize),
    });
  }
  return {
    records: records.slice(0, room),
    cursor: carryCursor(nextCursor, pageNo + 1),
    complete: false,
    carried,
  };
}
