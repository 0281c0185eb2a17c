/**
 * Where a declarative run is in its partner's paging, and where it goes next. The engine's cursor
 * of an `http` run is a position: `{"at": …}` — the partner's cursor, the next page's URL, the
 * page number or the offset (absent on the first request) — and, for a source whose partner
 * states a total, `"n"`: the records received before it. (`"skip"`, the records of the page at `at` already
 * taken, is only in cursors of runs an earlier build started.) Positions are compared run-wide by
 * the engine, so a partner cursor that comes back round is caught whatever its style — except
 * where `n` makes every position new: there the stated total ends the loop (`TOTAL_MISMATCH` as
 * soon as more records arrive than stated).
 *
 * Every way paging ends is one the config names, and the reason is said (`sources try` shows it):
 * a next cursor or link whose value `endWhen` lists, a stop flag, a short or empty page where the
 * style ends on one, a total reached. A page that ends none of these ways fails the run.
 */
import { failure } from '../../activities/job-api/index.ts';
import type { EndWhen, Pagination } from './config.ts';
import { dottedKeyHint, formatPath, notFoundText, type Path, type Read, readPath } from './path.ts';

export interface Position {
  /** The partner's cursor, the next URL, the page number or the offset; null: the first request. */
  at: string | number | null;
  /** Records of the page at `at` already taken (cursors of an earlier build only). */
  skip: number;
  /** Records received before this position, counted where the partner states a total. */
  n?: number;
}

export function encodePosition(p: Position): string | null {
  if (p.at === null && p.skip === 0 && p.n === undefined) return null;
  return JSON.stringify({
    at: p.at,
    ...(p.skip === 0 ? {} : { skip: p.skip }),
    ...(p.n === undefined ? {} : { n: p.n }),
  });
}

/** @throws ApplicationFailure InvalidInput `CURSOR_INVALID` for a cursor this job did not make. */
export function decodePosition(cursor: string | null, what: string): Position {
  if (cursor === null) return { at: null, skip: 0 };
  try {
    const p = JSON.parse(cursor) as Partial<Position>;
    const at = p.at ?? null;
    const skip = p.skip ?? 0;
    const { n } = p;
    const count = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
    if (
      (at === null || ['string', 'number'].includes(typeof at)) &&
      count(skip) &&
      (n === undefined || count(n))
    ) {
      return n === undefined ? { at, skip } : { at, skip, n };
    }
  } catch {
    // Falls through to the failure.
  }
  throw failure('InvalidInput', 'CURSOR_INVALID', `${what}: the run's cursor is not one this job wrote`);
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

/**
 * The warning of a child list's first page that is full and has no next cursor or link: the end,
 * or a cursor path (or rel) that reads nothing — children.ts judges it over the run's child lists.
 */
export const FULL_FIRST_PAGE = 'a full first page without a next cursor or link';

/** What one partner response says about paging. */
export interface Response {
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
  /** All the records of the response. */
  records: readonly unknown[];
  /** The URL that answered (after redirects): a relative next link is read against it. */
  url: URL;
  /** Records the request asked for; undefined when it did not tell the partner. */
  asked: number | undefined;
}

/** Where paging goes after a response, and why it ends when it does. */
export interface Step {
  /** Null: the partner has no more. */
  next: Position | null;
  /** Why paging ended (set when `next` is null), in words for `sources try`. */
  end?: string;
  /** What looked wrong without failing the page, for `sources try`. */
  warnings?: string[];
}

const shapeOf = (what: string) => (code: string, detail: string) =>
  failure('InvalidResponse', code, `${what}: ${detail}`);

/** A path's value, or the failure that names it and what the body held there instead. */
function required(body: unknown, path: Path, what: string, role: string): unknown {
  const read = readPath(body, path);
  if (read.found) return read.value;
  throw pathNotFound(read, path, what, role);
}

function pathNotFound(read: Exclude<Read, { found: true }>, path: Path, what: string, role: string): Error {
  return shapeOf(what)('PATH_NOT_FOUND', notFoundText(read, path, role));
}

/** The stop flag's word on this page: `end`, `more`, or undefined when the config has none. */
function flagOf(
  p: { hasMorePath?: Path | undefined; donePath?: Path | undefined },
  body: unknown,
  what: string,
): { says: 'end' | 'more'; why: string } | undefined {
  const path = p.hasMorePath ?? p.donePath;
  if (path === undefined) return undefined;
  const value = required(body, path, what, 'the stop flag');
  if (typeof value !== 'boolean') {
    throw shapeOf(what)('PAGE_SHAPE', `the stop flag ${formatPath(path)} is not true or false`);
  }
  const end = p.hasMorePath !== undefined ? !value : value;
  return { says: end ? 'end' : 'more', why: `${formatPath(path)} was ${String(value)}` };
}

/**
 * The next cursor or link a body gives, or why it ends paging: a value `endWhen` lists. Anything
 * else missing fails the run, naming the path and the keys the body held (a path read as something
 * it does not say must never look like the last page).
 */
function bodyCursor(
  body: unknown,
  path: Path,
  endWhen: readonly EndWhen[],
  what: string,
): { value: string | number } | { end: string; absent?: true } {
  const read = readPath(body, path);
  const name = formatPath(path);
  if (!read.found) {
    const hint = dottedKeyHint(read, path);
    if (hint === undefined && endWhen.includes('absent')) return { end: `${name} was absent`, absent: true };
    const advice =
      hint === undefined
        ? '; if the partner leaves it out on its last page, list "absent" in pagination.endWhen'
        : '';
    throw failure(
      'InvalidResponse',
      'PATH_NOT_FOUND',
      `${what}: ${notFoundText(read, path, 'the next cursor')}${advice}`,
    );
  }
  const { value } = read;
  if (value === null && endWhen.includes('null')) return { end: `${name} was null` };
  if (value === '' && endWhen.includes('empty')) return { end: `${name} was empty` };
  if (typeof value === 'string' && value !== '') return { value };
  if (typeof value === 'number' && Number.isFinite(value)) return { value };
  const seen =
    value === null ? 'null' : value === '' ? 'empty' : `a ${Array.isArray(value) ? 'list' : typeof value}`;
  throw shapeOf(what)(
    'NEXT_CURSOR_MISSING',
    `the next cursor ${name} was ${seen}, which pagination.endWhen (${endWhen.join(', ')}) does not name as the end`,
  );
}

/**
 * The position after the whole of `res`, or the end and why.
 * @throws ApplicationFailure InvalidResponse `PAGE_SHAPE`, `PATH_NOT_FOUND`, `NEXT_CURSOR_MISSING`,
 *   `TOTAL_MISMATCH`, `OFF_ORIGIN_NEXT_URL`.
 */
export function nextPosition(
  pagination: Pagination,
  here: Position,
  res: Response,
  ctx: { baseUrl: string; what: string; childList?: boolean },
): Step {
  const { what } = ctx;
  const shape = (detail: string) => failure('InvalidResponse', 'PAGE_SHAPE', `${what}: ${detail}`);
  switch (pagination.type) {
    case 'none':
      return { next: null, end: 'the source has no paging: one response holds the day' };
    case 'cursor':
    case 'next_url':
    case 'link_header': {
      const received = (here.n ?? 0) + res.records.length - here.skip;
      const total =
        pagination.totalPath === undefined ? undefined : countAt(res.body, pagination.totalPath, what);
      if (total !== undefined && received > total.value) throw totalMismatch(what, received, total, 'passed');
      const ended = (end: string, warnings?: string[]): Step => {
        if (total !== undefined && received !== total.value)
          throw totalMismatch(what, received, total, 'ended');
        const why = total === undefined ? end : `${end}; total ${total.value} received`;
        return { next: null, end: why, ...(warnings ? { warnings } : {}) };
      };
      const flag = pagination.type === 'link_header' ? undefined : flagOf(pagination, res.body, what);
      if (flag?.says === 'end') return ended(flag.why);
      // Before the cursor is read: an empty page has no last record to take a cursor from.
      if (res.records.length === 0 && pagination.emptyPage === 'end') {
        return ended('an empty page (pagination.emptyPage: end)');
      }
      let found: { value: string | number } | { end: string; absent?: true };
      if (pagination.type === 'link_header') {
        const link = linkTarget(res.headers.link, pagination.rel);
        found = link
          ? { value: link }
          : { end: `no Link header entry with rel="${pagination.rel}"`, absent: true };
      } else {
        found = bodyCursor(res.body, pagination.path, pagination.endWhen, what);
        if ('end' in found && flag?.says === 'more') {
          throw failure(
            'InvalidResponse',
            'NEXT_CURSOR_MISSING',
            `${what}: ${flag.why} (more to come) but ${found.end}`,
          );
        }
      }
      if ('end' in found) {
        const name =
          pagination.type === 'link_header'
            ? `the Link rel "${pagination.rel}"`
            : formatPath(pagination.path);
        if (!('absent' in found)) return ended(found.end);
        // Past the first request, the run's position is a cursor an earlier page held: the path
        // reads what the partner sends, and a full page without it is a last page that happened
        // to be full. On the first, a path (or rel) that reads something the partner does not
        // send looks just like this, so it is refused, never taken as the end.
        const first = here.at === null;
        if (first && total === undefined && flag === undefined && isFull(res)) {
          // One child list of many may end on a full page: the run tells which (children.ts).
          if (ctx.childList === true) return ended(found.end, [FULL_FIRST_PAGE]);
          throw failure(
            'InvalidResponse',
            'NEXT_CURSOR_MISSING',
            `${what}: a full page (${res.records.length} of ${res.asked} asked) without ${name}, ` +
              'which no page of this run has held: check it (sources try), or give pagination.totalPath',
          );
        }
        // A cursor that never resolves reads as the end on every page: `sources try` says so. (Not
        // of a child list: most end on their first page.)
        const warn = first && ctx.childList !== true;
        return ended(found.end, warn ? [`${name} did not resolve (read as the end)`] : undefined);
      }
      let at: string;
      if (pagination.type === 'cursor') {
        at = String(found.value);
      } else {
        if (typeof found.value !== 'string') throw shape('the next page link is not a string');
        at = sameOriginUrl(found.value, res.url, ctx.baseUrl, what);
      }
      return { next: { at, skip: 0, ...(total === undefined ? {} : { n: received }) } };
    }
    case 'page_number': {
      const page = typeof here.at === 'number' ? here.at : pagination.start;
      const nth = (page - pagination.start) / pagination.step + 1;
      const pages =
        pagination.totalPagesPath === undefined
          ? undefined
          : countAt(res.body, pagination.totalPagesPath, what);
      if (res.records.length === 0) {
        // A stated page that is empty is a count that does not hold — but one empty page of one is
        // how most partners say a day has no records.
        if (pages !== undefined && (nth < pages.value || (nth === pages.value && nth > 1))) {
          throw failure(
            'InvalidResponse',
            'TOTAL_MISMATCH',
            `${what}: page ${page} was empty, but the partner states ${pages.value} pages (${pages.name})`,
          );
        }
        return { next: null, end: `page ${page} was empty` };
      }
      if (pages !== undefined && nth >= pages.value) {
        return { next: null, end: `page ${page} was the last of ${pages.value} (${pages.name})` };
      }
      return { next: { at: page + pagination.step, skip: 0 } };
    }
    case 'offset': {
      const offset = typeof here.at === 'number' ? here.at : 0;
      const reached = offset + res.records.length;
      if (pagination.totalPath !== undefined) {
        // The partner's count decides: a page shorter than asked may only be the partner's own cap.
        const total = countAt(res.body, pagination.totalPath, what);
        if (reached >= total.value)
          return { next: null, end: `total ${total.value} (${total.name}) reached` };
        if (res.records.length === 0) throw totalMismatch(what, offset, total, 'ended');
        return { next: { at: reached, skip: 0 } };
      }
      if (res.records.length === 0) return { next: null, end: `the page at offset ${offset} was empty` };
      return res.asked !== undefined && res.records.length < res.asked
        ? { next: null, end: `a short page: ${res.records.length} of ${res.asked} asked` }
        : { next: { at: reached, skip: 0 } };
    }
  }
}

/** True when a page holds at least as many records as its request asked for. */
function isFull(res: Response): boolean {
  return res.asked !== undefined && res.asked > 0 && res.records.length >= res.asked;
}

/** A count the body states at `path` (a total of records or of pages). */
function countAt(body: unknown, path: Path, what: string): { value: number; name: string } {
  const value = required(body, path, what, 'the total');
  const name = formatPath(path);
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw failure('InvalidResponse', 'PAGE_SHAPE', `${what}: ${name} is not a count`);
  }
  return { value, name };
}

function totalMismatch(
  what: string,
  received: number,
  total: { value: number; name: string },
  how: 'passed' | 'ended',
): Error {
  return failure(
    'InvalidResponse',
    'TOTAL_MISMATCH',
    how === 'ended'
      ? `${what}: paging ended with ${received} records received, but the partner states ${total.value} (${total.name})`
      : `${what}: ${received} records received, more than the ${total.value} the partner states (${total.name})`,
  );
}
