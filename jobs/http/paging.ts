/**
 * Where a declarative run is in its partner's paging, and where it goes next. The engine's cursor
 * of an `http` run is a position: `{"at": …}` — the partner's cursor, the next page's URL, the
 * page number or the offset (absent on the first request) — with `"skip": n` when a partner page
 * held more records than the engine asked for and the rest is taken from the same page again.
 * Positions are compared run-wide by the engine, so a partner cursor that comes back round is
 * caught whatever its style.
 */
import { failure } from '../../activities/job-api/index.ts';
import type { Pagination } from './config.ts';

export interface Position {
  /** The partner's cursor, the next URL, the page number or the offset; null: the first request. */
  at: string | number | null;
  /** Records of the page at `at` already taken. */
  skip: number;
}

export function encodePosition(p: Position): string | null {
  if (p.at === null && p.skip === 0) return null;
  return JSON.stringify(p.skip === 0 ? { at: p.at } : { at: p.at, skip: p.skip });
}

/** @throws ApplicationFailure InvalidInput `CURSOR_INVALID` for a cursor this job did not make. */
export function decodePosition(cursor: string | null, what: string): Position {
  if (cursor === null) return { at: null, skip: 0 };
  try {
    const p = JSON.parse(cursor) as Partial<Position>;
    const at = p.at ?? null;
    const skip = p.skip ?? 0;
    if ((at === null || ['string', 'number'].includes(typeof at)) && Number.isInteger(skip) && skip >= 0) {
      return { at, skip };
    }
  } catch {
    // Falls through to the failure.
  }
  throw failure('InvalidInput', 'CURSOR_INVALID', `${what}: the run's cursor is not one this job wrote`);
}

/** The value at a dotted path of a JSON body (`meta.next_cursor`, `items.0`), or undefined. */
export function at(body: unknown, path: string): unknown {
  let value = body;
  for (const key of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** The `rel` target of an RFC 8288 `Link` header, or undefined. */
export function linkTarget(header: string | string[] | undefined, rel: string): string | undefined {
  const text = Array.isArray(header) ? header.join(',') : header;
  if (!text) return undefined;
  for (const match of text.matchAll(/<([^>]*)>((?:\s*;\s*[^;,]+)*)/g)) {
    const params = match[2] ?? '';
    const rels = /;\s*rel\s*=\s*"?([^";]+)"?/i.exec(params)?.[1]?.trim().toLowerCase().split(/\s+/);
    if (rels?.includes(rel)) return match[1];
  }
  return undefined;
}

/**
 * An absolute next-page URL, resolved against the request's, refused unless it keeps the source's
 * origin (scheme, host, port): the worker sends the source's credentials with it, so a partner (or
 * anyone between) must not be able to point it at another host.
 * @throws ApplicationFailure InvalidResponse `OFF_ORIGIN_NEXT_URL`, `PAGE_SHAPE` (not a URL).
 */
export function sameOriginUrl(next: string, requestUrl: URL, baseUrl: string, what: string): string {
  let url: URL;
  try {
    url = new URL(next, requestUrl);
  } catch {
    throw failure('InvalidResponse', 'PAGE_SHAPE', `${what}: the next page's link is not a URL`);
  }
  if (url.origin !== new URL(baseUrl).origin) {
    throw failure(
      'InvalidResponse',
      'OFF_ORIGIN_NEXT_URL',
      `${what}: the next page's link leaves the source's origin; not followed (credentials stay home)`,
    );
  }
  url.hash = '';
  return url.href;
}

/** What one partner response says about paging. */
export interface Response {
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
  /** All the records of the response. */
  records: readonly unknown[];
  /** The URL requested. */
  url: URL;
  /** Records asked for. */
  asked: number;
}

/**
 * The position after the whole of `res` (skip 0), or null when the partner has no more.
 * @throws ApplicationFailure InvalidResponse `PAGE_SHAPE`, `OFF_ORIGIN_NEXT_URL`.
 */
export function nextPosition(
  pagination: Pagination,
  here: Position,
  res: Response,
  ctx: { baseUrl: string; what: string },
): Position | null {
  const { what } = ctx;
  const shape = (detail: string) => failure('InvalidResponse', 'PAGE_SHAPE', `${what}: ${detail}`);
  switch (pagination.type) {
    case 'none':
      return null;
    case 'cursor': {
      const next = at(res.body, pagination.path);
      if (next === null || next === undefined || next === '') return null;
      if (typeof next !== 'string' && typeof next !== 'number')
        throw shape(`${pagination.path} is not a cursor`);
      return { at: String(next), skip: 0 };
    }
    case 'next_url':
    case 'link_header': {
      const next =
        pagination.type === 'next_url'
          ? at(res.body, pagination.path)
          : linkTarget(res.headers.link, pagination.rel);
      if (next === null || next === undefined || next === '') return null;
      if (typeof next !== 'string') throw shape('the next page link is not a string');
      return { at: sameOriginUrl(next, res.url, ctx.baseUrl, what), skip: 0 };
    }
    case 'page_number': {
      const page = typeof here.at === 'number' ? here.at : pagination.start;
      if (res.records.length === 0) return null;
      if (pagination.totalPagesPath !== undefined) {
        const total = at(res.body, pagination.totalPagesPath);
        if (typeof total !== 'number' || !Number.isInteger(total))
          throw shape(`${pagination.totalPagesPath} is not a page count`);
        if ((page - pagination.start) / pagination.step + 1 >= total) return null;
      }
      return { at: page + pagination.step, skip: 0 };
    }
    case 'offset': {
      const offset = typeof here.at === 'number' ? here.at : 0;
      const reached = offset + res.records.length;
      if (res.records.length === 0) return null;
      if (pagination.totalPath !== undefined) {
        // The partner's count decides: a page shorter than asked may only be the partner's own cap.
        const total = at(res.body, pagination.totalPath);
        if (typeof total !== 'number' || !Number.isInteger(total))
          throw shape(`${pagination.totalPath} is not a count`);
        return reached >= total ? null : { at: reached, skip: 0 };
      }
      return res.records.length < res.asked ? null : { at: reached, skip: 0 };
    }
  }
}
