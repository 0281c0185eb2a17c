// The catalog's answer in each pagination style, as at most one list fault (`loop`, `off_origin`)
// bends it. Pure: the same request always gets the same bytes.
import type { CatalogAuth } from './auth.ts';
import {
  type CatalogStyle,
  catalogRecords,
  catalogTotal,
  cursorParam,
  dateParam,
  numberParam,
  POSITION_PARAM,
  SIZE_PARAM,
  sizeParam,
  windowParams,
} from './catalog.ts';
import type { ActiveFault } from './faults.ts';
import type { ReadAnswer, ReadShape } from './read-route.ts';
import { encodeCursor } from './records.ts';

/** A catalog request past its credential check. */
export interface CatalogRequest {
  auth: CatalogAuth;
  style: CatalogStyle;
  /** The paging parameters: the query string, or for `search` the JSON body's fields. */
  query: URLSearchParams;
  /** `http://host:port` the request was sent to, from its `Host` header (absolute links). */
  origin: string;
  /** The catalog's record count for a date (the partner's option). */
  count: (date: string) => number;
}

/** How each style's faulted bodies look (`malformed`, `schema`, `oversize`). */
export const CATALOG_SHAPES: Record<CatalogStyle, ReadShape> = {
  cursor: {
    itemsKey: 'items',
    malformedBody: '{"items": [{"id": "catalog-',
    schemaBody: { data: [{ identifier: 1 }], cursor: 42 },
  },
  'next-url': {
    itemsKey: 'results',
    malformedBody: '{"results": [{"id": "catalog-',
    schemaBody: { items: [{ identifier: 1 }], next: 7 },
  },
  'link-header': {
    itemsKey: null,
    malformedBody: '[{"id": "catalog-',
    schemaBody: { items: [{ identifier: 1 }] },
  },
  'page-number': {
    itemsKey: 'data',
    malformedBody: '{"data": [{"id": "catalog-',
    schemaBody: { rows: [{ identifier: 1 }], page: 'one' },
  },
  offset: {
    itemsKey: 'records',
    malformedBody: '{"records": [{"id": "catalog-',
    schemaBody: { records: 'none', total: -1 },
  },
  none: {
    itemsKey: 'items',
    malformedBody: '{"items": [{"id": "catalog-',
    schemaBody: { item: { identifier: 1 } },
  },
  search: {
    itemsKey: 'hits',
    malformedBody: '{"hits": [{"id": "catalog-',
    schemaBody: { hits: { total: 3 }, next: false },
  },
};

/** Path and query of the page at `position` of a linked style, keeping date and page size. */
function pageLink(req: CatalogRequest, date: string, size: number, position: string | null): string {
  const query = new URLSearchParams({ date, [SIZE_PARAM[req.style] ?? 'limit']: String(size) });
  const name = POSITION_PARAM[req.style];
  if (position !== null && name !== null) query.set(name, position);
  return `/catalog/${req.auth}/${req.style}/items?${query.toString()}`;
}

/** Where the next link points: its own origin (none for a relative `next-url`), or the fault's. */
function nextOrigin(req: CatalogRequest, fault: ActiveFault | undefined): string {
  if (fault?.kind === 'off_origin' && fault.url) return new URL(fault.url).origin;
  return req.style === 'link-header' ? req.origin : '';
}

/**
 * The styles whose server names the next position (`cursor`, `next-url`, `link-header`,
 * `search`): an opaque cursor at the next page's first record. A `loop` names the second page's.
 */
function cursorAnswer(req: CatalogRequest, date: string, size: number, fault?: ActiveFault): ReadAnswer {
  const total = catalogTotal(req.count, date);
  const name = POSITION_PARAM[req.style] ?? 'cursor';
  const from = cursorParam(req.query.get(name), name, total);
  const items = catalogRecords(date, from, size, total);
  const end = from + items.length - 1;
  let nextSeq = end < total ? end + 1 : undefined;
  if (fault?.kind === 'loop' && size < total) nextSeq = size + 1;
  const next = nextSeq === undefined ? null : encodeCursor(nextSeq);
  const link = next === null ? null : `${nextOrigin(req, fault)}${pageLink(req, date, size, next)}`;
  switch (req.style) {
    case 'next-url': {
      const page = { results: items, links: { next: link } };
      return { status: 200, body: page, page };
    }
    case 'link-header': {
      // rel="first" comes first, so a client taking the first link instead of rel="next" is caught.
      const links = [`<${req.origin}${pageLink(req, date, size, null)}>; rel="first"`];
      if (link !== null) links.push(`<${link}>; rel="next"`);
      return { status: 200, body: items, page: items, headers: { link: links.join(', ') } };
    }
    case 'search': {
      const page = { hits: items, next };
      return { status: 200, body: page, page };
    }
    default: {
      const page = { items, meta: { next_cursor: next } };
      return { status: 200, body: page, page };
    }
  }
}

/** `page-number`: 1-based pages; a `loop` serves page 1's data and claims a page after this one. */
function pageNumberAnswer(req: CatalogRequest, date: string, size: number, fault?: ActiveFault): ReadAnswer {
  const total = catalogTotal(req.count, date);
  const page = numberParam(req.query.get('page'), 'page', 1, 1);
  const loop = fault?.kind === 'loop';
  const pages = Math.ceil(total / size);
  const data = catalogRecords(date, loop ? 1 : (page - 1) * size + 1, size, total);
  const body = { data, page, per_page: size, total_pages: loop ? Math.max(pages, page + 1) : pages };
  return { status: 200, body, page: body };
}

/** `offset`: 0-based offsets; a `loop` serves the first page's records and a total beyond these. */
function offsetAnswer(req: CatalogRequest, date: string, size: number, fault?: ActiveFault): ReadAnswer {
  const total = catalogTotal(req.count, date);
  const offset = numberParam(req.query.get('offset'), 'offset', 0, 0);
  const loop = fault?.kind === 'loop';
  const records = catalogRecords(date, loop ? 1 : offset + 1, size, total);
  const body = { records, total: loop ? Math.max(total, offset + size + 1) : total };
  return { status: 200, body, page: body };
}

/** `none`: the whole list, or those records whose `updatedAt` lies in `[since, until)`. */
function unpagedAnswer(req: CatalogRequest, date: string): ReadAnswer {
  const total = catalogTotal(req.count, date);
  const window = windowParams(req.query.get('since'), req.query.get('until'));
  const inWindow = (updatedAt: string) => {
    const at = Date.parse(updatedAt);
    return window === undefined || (at >= window[0] && at < window[1]);
  };
  const body = { items: catalogRecords(date, 1, total, total).filter((r) => inWindow(r.updatedAt)) };
  return { status: 200, body, page: body };
}

/**
 * The answer to a catalog request under `fault` (a list kind shapes the page, any other kind is
 * `serveRead`'s to apply); see `CATALOG_STYLES` for each style and `FaultKind` for the faults.
 * Pure; throws `HttpError` 400 (`invalid_date`, `invalid_<parameter>`, `invalid_range`).
 */
export function catalogAnswer(req: CatalogRequest, fault: ActiveFault | undefined): ReadAnswer {
  const date = dateParam(req.query.get('date'));
  const sizeName = SIZE_PARAM[req.style];
  if (sizeName === null) return unpagedAnswer(req, date);
  const size = sizeParam(req.query.get(sizeName), sizeName);
  if (req.style === 'page-number') return pageNumberAnswer(req, date, size, fault);
  if (req.style === 'offset') return offsetAnswer(req, date, size, fault);
  return cursorAnswer(req, date, size, fault);
}
