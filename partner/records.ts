// Pure, deterministic data of the demo partner: the same (sourceId, date) always yields the same
// records, pages and cursors, so tests and benchmarks can compare runs byte for byte.

/** One business record as the partner serves it. Synthetic: no personal data. */
export interface PartnerRecord {
  id: string;
  seq: number;
  date: string;
  /** Decimal string with two fraction digits, e.g. "123.45" (never a float). */
  amount: string;
  currency: 'EUR' | 'USD' | 'GBP';
  category: string;
  /** ISO timestamp on `date` (UTC). */
  updatedAt: string;
}

/** Body of `GET /sources/:sourceId/records`. */
export interface RecordsPage {
  sourceId: string;
  date: string;
  records: PartnerRecord[];
  /** Opaque cursor of the next page, or null on the last page. */
  nextCursor: string | null;
  /** Number of records for (sourceId, date) over all pages. */
  total: number;
}

const CURRENCIES = ['EUR', 'USD', 'GBP'] as const;
const CATEGORIES = ['sales', 'refunds', 'fees', 'transfers', 'adjustments'] as const;
const CURSOR_PATTERN = /^v1:([1-9]\d{0,8})$/;

/** 32-bit FNV-1a hash of a string. Pure; stable across processes and Node versions. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Default record count for (sourceId, date): deterministic, in 150..400 inclusive. */
export function defaultRecordCount(sourceId: string, date: string): number {
  return 150 + (hash32(`count|${sourceId}|${date}`) % 251);
}

/** True when `date` is a real calendar date written `YYYY-MM-DD`. Future dates are valid. */
export function isValidDate(date: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return false;
  const parsed = new Date(`${date}T00:00:00.000Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === date;
}

/** The record number `seq` (1-based) of (sourceId, date). Pure. */
export function makeRecord(sourceId: string, date: string, seq: number): PartnerRecord {
  const h = hash32(`record|${sourceId}|${date}|${seq}`);
  const cents = 100 + (h % 99_900); // 1.00 .. 999.99, built from integers to avoid float rounding
  const secondOfDay = hash32(`time|${sourceId}|${date}|${seq}`) % 86_400;
  const time = new Date(Date.parse(`${date}T00:00:00.000Z`) + secondOfDay * 1000);
  return {
    id: `${sourceId}-${date}-${String(seq).padStart(5, '0')}`,
    seq,
    date,
    amount: `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`,
    currency: CURRENCIES[h % CURRENCIES.length] ?? 'EUR',
    category: CATEGORIES[(h >>> 8) % CATEGORIES.length] ?? 'sales',
    updatedAt: time.toISOString(),
  };
}

/** Cursor pointing at record `seq`: base64url of `v1:<seq>`. Deterministic, opaque to clients. */
export function encodeCursor(seq: number): string {
  return Buffer.from(`v1:${seq}`, 'utf8').toString('base64url');
}

/**
 * The seq a cursor points at, or undefined when the cursor is malformed or outside 2..total
 * (the partner never issues a cursor for the first page or past the last record).
 */
export function decodeCursor(cursor: string, total: number): number | undefined {
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(cursor)) return undefined;
  const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  // Round-trip check: base64url decoding is lenient, so only the exact encoding we emit is accepted.
  const match = CURSOR_PATTERN.exec(decoded);
  if (!match?.[1] || encodeCursor(Number(match[1])) !== cursor) return undefined;
  const seq = Number(match[1]);
  return seq >= 2 && seq <= total ? seq : undefined;
}

/** The page of (sourceId, date) starting at record `fromSeq`, at most `limit` records. Pure. */
export function buildPage(
  sourceId: string,
  date: string,
  fromSeq: number,
  limit: number,
  total: number,
): RecordsPage {
  const records: PartnerRecord[] = [];
  const end = Math.min(total, fromSeq + limit - 1);
  for (let seq = fromSeq; seq <= end; seq++) records.push(makeRecord(sourceId, date, seq));
  return { sourceId, date, records, nextCursor: end < total ? encodeCursor(end + 1) : null, total };
}
