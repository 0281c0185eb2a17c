// Pure, deterministic data of the partner's catalog: one list of records per date, served in the
// pagination styles real REST APIs use, so one declarative HTTP job can be tested against each.
import { HttpError } from './http-io.ts';
import { decodeCursor, isValidDate, makeRecord, type PartnerRecord } from './records.ts';

/** The source id the catalog's records are made for: ids read `catalog-<date>-<seq>`. */
export const CATALOG_SOURCE = 'catalog';

/**
 * The pagination styles (the `:style` path segment; `search` is `POST /catalog/:auth/search`):
 * - `cursor`: `?cursor=` → `{ items, meta: { next_cursor } }`;
 * - `next-url`: `?page_token=` → `{ results, links: { next } }`, `next` a relative URL;
 * - `link-header`: `?after=` → a bare array, the next page in `Link: <absolute url>; rel="next"`;
 * - `page-number`: `?page=` (1-based) → `{ data, page, per_page, total_pages }`;
 * - `offset`: `?offset=` → `{ records, total }`;
 * - `none`: every record at once, `?since=&until=` (epoch seconds) filtering by `updatedAt`;
 * - `search`: a JSON body `{ date, limit?, cursor? }` → `{ hits, next }`.
 */
export const CATALOG_STYLES = [
  'cursor',
  'next-url',
  'link-header',
  'page-number',
  'offset',
  'none',
  'search',
] as const;
export type CatalogStyle = (typeof CATALOG_STYLES)[number];

/** Styles whose pages carry a link to the next page (what an `off_origin` fault redirects). */
export const LINKED_STYLES: readonly CatalogStyle[] = ['next-url', 'link-header'];

/** Styles with pages at all: a `loop` fault can send a client round on them (not on `none`). */
export const PAGED_STYLES: readonly CatalogStyle[] = CATALOG_STYLES.filter((s) => s !== 'none');

/** The parameter naming a page's position in each style (the body's `cursor` for `search`). */
export const POSITION_PARAM: Record<CatalogStyle, string | null> = {
  cursor: 'cursor',
  'next-url': 'page_token',
  'link-header': 'after',
  'page-number': 'page',
  offset: 'offset',
  none: null,
  search: 'cursor',
};

/** The parameter naming the page size in each style (`none` has no pages). */
export const SIZE_PARAM: Record<CatalogStyle, string | null> = {
  cursor: 'limit',
  'next-url': 'limit',
  'link-header': 'per_page',
  'page-number': 'per_page',
  offset: 'limit',
  none: null,
  search: 'limit',
};

/** Default page size of every paged style, and its ceiling. */
export const DEFAULT_CATALOG_PAGE_SIZE = 25;
export const MAX_CATALOG_PAGE_SIZE = 100;

/** Largest `page` or `offset` accepted (beyond any list: such pages are simply empty). */
const MAX_POSITION_NUMBER = 9_999_999;

/** The catalog's record count for a date, as the partner's option says, clamped to ≥ 0. Pure. */
export function catalogTotal(count: (date: string) => number, date: string): number {
  return Math.max(0, Math.floor(count(date)));
}

/** Records `from`..`from + count − 1` (1-based) of `date`, as far as the `total` go. Pure. */
export function catalogRecords(date: string, from: number, count: number, total: number): PartnerRecord[] {
  const records: PartnerRecord[] = [];
  for (let seq = Math.max(1, from); seq <= Math.min(total, from + count - 1); seq++) {
    records.push(makeRecord(CATALOG_SOURCE, date, seq));
  }
  return records;
}

/** Every record id of `date`, in list order (what `GET /_admin/catalog` lists). Pure. */
export function catalogIds(date: string, total: number): string[] {
  return catalogRecords(date, 1, total, total).map((r) => r.id);
}

/** The `date` parameter, validated. Throws `HttpError` 400 `invalid_date`. */
export function dateParam(raw: string | null): string {
  if (raw === null || !isValidDate(raw)) {
    throw new HttpError(400, 'invalid_date', '"date" must be a calendar date written YYYY-MM-DD');
  }
  return raw;
}

/** A page size parameter named `name` (default 25). Throws `HttpError` 400 `invalid_<name>`. */
export function sizeParam(raw: string | null, name: string): number {
  if (raw === null) return DEFAULT_CATALOG_PAGE_SIZE;
  const size = Number(raw);
  if (!/^\d{1,3}$/.test(raw) || size < 1 || size > MAX_CATALOG_PAGE_SIZE) {
    throw new HttpError(
      400,
      `invalid_${name}`,
      `"${name}" must be an integer in 1..${MAX_CATALOG_PAGE_SIZE}`,
    );
  }
  return size;
}

/**
 * The first record (1-based) an opaque cursor parameter named `name` points at; 1 when absent.
 * Throws `HttpError` 400 `invalid_<name>` for a cursor this partner never issued for the date.
 */
export function cursorParam(raw: string | null, name: string, total: number): number {
  if (raw === null) return 1;
  const seq = decodeCursor(raw, total);
  if (seq === undefined) {
    throw new HttpError(
      400,
      `invalid_${name}`,
      `"${name}" is not a cursor this partner issued for this date`,
    );
  }
  return seq;
}

/** A whole-number parameter named `name`, at least `min`. Throws `HttpError` 400 `invalid_<name>`. */
export function numberParam(raw: string | null, name: string, min: number, fallback: number): number {
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!/^\d{1,7}$/.test(raw) || value < min || value > MAX_POSITION_NUMBER) {
    throw new HttpError(
      400,
      `invalid_${name}`,
      `"${name}" must be an integer in ${min}..${MAX_POSITION_NUMBER}`,
    );
  }
  return value;
}

/**
 * The `[since, until)` window of the `none` style in epoch milliseconds, or undefined when neither
 * is given. Throws `HttpError` 400 `invalid_since`/`invalid_until` (not whole epoch seconds) or
 * `invalid_range` (one without the other, or `until` before `since`).
 */
export function windowParams(since: string | null, until: string | null): [number, number] | undefined {
  if (since === null && until === null) return undefined;
  for (const [name, raw] of [
    ['since', since],
    ['until', until],
  ] as const) {
    if (raw !== null && !/^\d{1,12}$/.test(raw)) {
      throw new HttpError(400, `invalid_${name}`, `"${name}" must be whole epoch seconds`);
    }
  }
  if (since === null || until === null || Number(until) < Number(since)) {
    throw new HttpError(400, 'invalid_range', 'give both "since" and "until" (since ≤ until), or neither');
  }
  return [Number(since) * 1000, Number(until) * 1000];
}
