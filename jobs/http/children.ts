/**
 * Parent → child lists of the declarative job (config `children`; guide: docs/http-sources.md,
 * "Parent → child lists"): the source's list is of parents (`/accounts`, paged in any style), and
 * for each parent the child list (`/accounts/{parent.id}/orders`, paged in its own style) is read
 * and stored, each record under `<parentId><idSeparator><childId>` (the child list's separator),
 * so that two parents' children with the same id never merge. Parents are read one after the
 * other, in the parent list's order; within a run nothing runs in parallel.
 *
 * Where a run is lives in the engine's cursor (committed with every page, handed back after a
 * crash), so a crash in parent 37's third child page resumes there: the cursor holds the parent
 * page it is on (`p`), the one after it (`n`), the parents of that page not yet started (`q`: the
 * values their child request names, or the id alone where that is all it names), the parent being
 * read and its child list's cursor (`k`, `c`), the partner requests made beyond one per call
 * (`x`, for `limits.maxPages`), the parents found gone (`g`) or any child list answered (`a`), and
 * the child lists that ended on a full first page (`u`) or whether any held a next cursor (`h`).
 * The engine keeps a cursor to {@link MAX_CURSOR_LENGTH} characters: parents that do not fit are
 * left out (`m`, with `i` the index on page `p` past those kept), and that page is read again when
 * the run gets to them, continuing after the last parent done (`l`). Should that parent have left
 * the page between the two reads, the page is read again from its start: its children are stored
 * again under the same ids (nothing is lost; the requests are spent again). A parent found gone
 * makes the run read its page again too, before the next page: where a partner pages by number or
 * offset (GitHub's links do), its parents after it have moved up by one, the first of the next
 * page into this one.
 *
 * One call may make several requests — a parent page and a first child page; child lists that are
 * empty or gone one after the other — because the engine takes no empty page with a cursor: it
 * returns once it has records, or at the end. Each request counts against `limits.maxPages`, and
 * each goes through the same reading of responses, rate limits and retries as any other (a
 * refused request fails the call; its retry asks again from the cursor last committed).
 *
 * A parent gone between the parent page and its children is no error: a 404 (with no response
 * rule of the source matching it) on the FIRST page of its child list skips it, with a warning.
 * A 404 past that first page fails the run as any 404 does (records of that parent are missing),
 * and a run whose every child list answered 404 fails (`CHILD_LISTS_NOT_FOUND`: a child path
 * that reads nothing must never look like parents that are all gone).
 *
 * Likewise a child list whose first page is full and has no next cursor or link has ended — or its
 * cursor path (or rel) reads nothing. One list cannot tell; the run can: such lists fail it
 * (`NEXT_CURSOR_MISSING`, at its end) unless some child list of the run held a next cursor.
 */
import { failure, type FetchContext, type FetchedPage } from '../../activities/job-api/index.ts';
import { MAX_CURSOR_LENGTH } from '../../contract/input-limits.ts';
import { childParentPaths } from './children-config.ts';
import type { HttpJobConfig } from './config.ts';
import { FULL_FIRST_PAGE } from './paging.ts';
import { formatPath, parsePath, valueAt } from './path.ts';
import type { ParentValues } from './template.ts';

/** A record with the id its list's config gives it (index.ts's `KeyedRecord`). */
export interface Keyed {
  id: string;
  record: unknown;
}

/** Reads one response of the list `ctx.source.config` describes (index.ts's `fetchHttpPage`). */
export type ListReader = (
  ctx: FetchContext<HttpJobConfig>,
  parent?: ParentValues,
) => Promise<FetchedPage<Keyed>>;

/** Parents asked for per parent page: a fixed number, so that page `p` read again is the same page. */
export const PARENTS_ASKED = 100;

/** A parent as the cursor keeps it: its id alone, or `[id, ...values]` (see {@link ParentShape}). */
export type Entry = string | number | (string | number)[];

/** Which of a parent's values the child request names, and whether its id is all it names. */
export interface ParentShape {
  /** The `{parent.<path>}` path texts, sorted (the order of an entry's values). */
  paths: string[];
  /** True when the only path named is the parent's id: an entry is then that value alone. */
  compact: boolean;
}

/** Where a parent → child run is (see the file's header for the cursor's fields). */
export interface State {
  /** False only before the first parent page is read. */
  started: boolean;
  /** The parent list's cursor of the page the parents in `queue` come from (null: its first). */
  pp: string | null;
  /** The parent list's cursor of the page after it; null: page `pp` is the last. */
  pn: string | null;
  /** Index on page `pp` just past the parents kept (`queue` ends there). */
  i: number;
  /** True when page `pp` holds parents past `i`, left out of the cursor to keep it short. */
  more: boolean;
  queue: Entry[];
  /** The parent whose child list is being read, and that list's cursor (null: its first page). */
  current?: { entry: Entry; at: string | null };
  /** The last parent of page `pp` done (its child list ended) or found gone (404). */
  last?: { id: string; gone: boolean };
  /** When `last` was gone: the last parent of page `pp` done before it. */
  lastDone?: string;
  /** Partner requests the run made beyond one per `fetchPage` call. */
  extra: number;
  /** Parents whose child list was gone (404 on its first page). */
  gone: number;
  /** True once any child list answered. */
  answered: boolean;
  /** Child lists that ended on a full first page without a next cursor (see the file's header). */
  unproven: number;
  /** True once any child list held a next cursor. */
  proven: boolean;
}

export const START: Readonly<State> = {
  started: false,
  pp: null,
  pn: null,
  i: 0,
  more: false,
  queue: [],
  extra: 0,
  gone: 0,
  answered: false,
  unproven: 0,
  proven: false,
};

/** The shape of `config`'s parent entries. */
export function parentShape(config: HttpJobConfig): ParentShape {
  const children = config.children;
  const paths = children === undefined ? [] : childParentPaths(children.request);
  const [idPath, ...more] = config.records.id;
  const compact =
    paths.length === 1 &&
    idPath !== undefined &&
    more.length === 0 &&
    formatPath(parsePath(paths[0] ?? '')) === formatPath(idPath);
  return { paths, compact };
}

export function entryId(entry: Entry): string {
  return String(Array.isArray(entry) ? entry[0] : entry);
}

/** The values a child request of `entry` fills `{parent.<path>}` with. */
export function parentValues(entry: Entry, shape: ParentShape): ParentValues {
  if (!Array.isArray(entry)) return { [shape.paths[0] ?? 'id']: entry };
  return Object.fromEntries(shape.paths.map((path, j) => [path, entry[j + 1] ?? '']));
}

/**
 * The entry of a parent record.
 * @throws ApplicationFailure InvalidResponse `PARENT_WITHOUT_ID`, `PARENT_VALUE_MISSING` (a value
 *   the child request names is not a string or a number).
 */
export function entryOf(parent: Keyed, shape: ParentShape, what: string): Entry {
  if (parent.id === '') {
    throw failure(
      'InvalidResponse',
      'PARENT_WITHOUT_ID',
      `${what}: a parent record without an id (records.id)`,
    );
  }
  const values = shape.paths.map((path) => {
    const value = valueAt(parent.record, parsePath(path));
    if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) return value;
    throw failure(
      'InvalidResponse',
      'PARENT_VALUE_MISSING',
      `${what}: parent ${parent.id} has no text or number at {parent.${path}}`,
    );
  });
  if (shape.compact) return values[0] ?? parent.id;
  return [parent.id, ...values];
}

const json = (cursor: string | null): unknown => (cursor === null ? null : JSON.parse(cursor));
const text = (value: unknown): string | null => (value === null ? null : JSON.stringify(value));

function lastFields(s: State): Record<string, string | 1> {
  if (s.last === undefined) return {};
  if (!s.last.gone) return { l: s.last.id };
  return { l: s.last.id, lg: 1, ...(s.lastDone === undefined ? {} : { d: s.lastDone }) };
}

/** The cursor of `state` (may be longer than the engine takes: {@link fitted}). */
export function encodeState(s: State): string {
  return JSON.stringify({
    p: json(s.pp),
    n: json(s.pn),
    i: s.i,
    ...(s.more ? { m: 1 } : {}),
    ...lastFields(s),
    q: s.queue,
    ...(s.current === undefined ? {} : { k: s.current.entry, c: json(s.current.at) }),
    ...(s.extra === 0 ? {} : { x: s.extra }),
    ...(s.gone === 0 ? {} : { g: s.gone }),
    ...(s.answered ? { a: 1 } : {}),
    ...(s.unproven === 0 ? {} : { u: s.unproven }),
    ...(s.proven ? { h: 1 } : {}),
  });
}

const isCount = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;
const isValue = (v: unknown): v is string | number =>
  typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
const isEntry = (v: unknown): v is Entry =>
  isValue(v) || (Array.isArray(v) && v.length >= 1 && v.every(isValue));
const isListCursor = (v: unknown) => v === null || (typeof v === 'object' && !Array.isArray(v));

/** @throws ApplicationFailure InvalidInput `CURSOR_INVALID` for a cursor this job did not make. */
export function decodeState(cursor: string | null, what: string): State {
  if (cursor === null) return { ...START, queue: [] };
  try {
    const c = JSON.parse(cursor) as Record<string, unknown>;
    const { p, n, i, m, l, lg, d, q, k, x, g, a, u, h } = c;
    const child = c.c;
    if (
      isListCursor(p) &&
      isListCursor(n) &&
      isCount(i) &&
      (m === undefined || m === 1) &&
      (l === undefined || typeof l === 'string') &&
      (lg === undefined || (lg === 1 && l !== undefined)) &&
      (d === undefined || (typeof d === 'string' && lg === 1)) &&
      Array.isArray(q) &&
      q.every(isEntry) &&
      (k === undefined ? child === undefined : isEntry(k) && child !== undefined && isListCursor(child)) &&
      (x === undefined || isCount(x)) &&
      (g === undefined || isCount(g)) &&
      (a === undefined || a === 1) &&
      (u === undefined || isCount(u)) &&
      (h === undefined || h === 1)
    ) {
      return {
        started: true,
        pp: text(p),
        pn: text(n),
        i,
        more: m === 1,
        queue: q,
        ...(k === undefined ? {} : { current: { entry: k as Entry, at: text(child) } }),
        ...(l === undefined ? {} : { last: { id: l, gone: lg === 1 } }),
        ...(d === undefined ? (l === undefined || lg === 1 ? {} : { lastDone: l }) : { lastDone: d }),
        extra: x ?? 0,
        gone: g ?? 0,
        answered: a === 1,
        unproven: u ?? 0,
        proven: h === 1,
      };
    }
  } catch {
    // Falls through to the failure.
  }
  throw failure('InvalidInput', 'CURSOR_INVALID', `${what}: the run's cursor is not one this job wrote`);
}

/**
 * The cursor of `state` within `max` characters: parents are left out from the end of the queue
 * (read again from page `pp` when the run gets to them) until it fits. Mutates `state` to match.
 * @throws ApplicationFailure InvalidResponse `CURSOR_TOO_LONG` when the list cursors alone do not fit.
 */
export function fitted(s: State, what: string, max = MAX_CURSOR_LENGTH): string {
  let cursor = encodeState(s);
  while (cursor.length > max && s.queue.length > 0) {
    s.queue.pop();
    s.i -= 1;
    s.more = true;
    cursor = encodeState(s);
  }
  if (cursor.length > max) {
    throw failure(
      'InvalidResponse',
      'CURSOR_TOO_LONG',
      `${what}: the parent and child lists' cursors and the parent's values need ${cursor.length} characters, over the ${max} a run's cursor holds`,
    );
  }
  return cursor;
}

/**
 * Where on page `pp`, read again, the parents not yet done start: past the last one done (or gone
 * and still listed), found where it was or wherever it moved to. A gone one that left is passed
 * by the last one done before it; from the page's start when none was, or when a parent done
 * left the page (its children are read again: nothing is skipped).
 */
export function resumeIndex(entries: readonly Entry[], s: State, warnings: string[]): number {
  const last = s.last;
  if (last === undefined) return 0;
  const after = (id: string) => {
    const at = entries[s.i - 1];
    if (at !== undefined && entryId(at) === id) return s.i;
    return entries.findIndex((e) => entryId(e) === id) + 1;
  };
  const found = after(last.id);
  if (found > 0) return found;
  const done = last.gone ? s.lastDone : last.id;
  if (done === undefined) return 0;
  const before = last.gone ? after(done) : 0;
  if (before > 0) return before;
  warnings.push(
    `parent ${done} left its parent page between two reads of it: the page's parents are read again from its first`,
  );
  return 0;
}

/** True when `err` is the engine's reading of a plain 404 (no response rule of the source matched). */
function isPlain404(err: unknown): boolean {
  const f = err as { type?: unknown; details?: unknown } | null;
  const details = Array.isArray(f?.details) ? (f.details[0] as { code?: unknown } | undefined) : undefined;
  return f?.type === 'NotFound' && details?.code === 'HTTP_404';
}

/**
 * The job's `fetchPage` for a source with `children` (see the file's header): the next records of
 * the current parent's child list, or of the next parents', with the cursor of where that leaves
 * the run. A read: repeat-safe.
 * @throws ApplicationFailure as `read`, and InvalidResponse `PARENT_WITHOUT_ID`,
 *   `PARENT_VALUE_MISSING`, `EMPTY_PAGE_WITH_CURSOR` (a child page), `CHILD_LISTS_NOT_FOUND`,
 *   `CURSOR_TOO_LONG`; InvalidInput `CURSOR_INVALID`.
 */
export async function fetchParentChildPage(
  ctx: FetchContext<HttpJobConfig>,
  read: ListReader,
): Promise<FetchedPage<Keyed>> {
  const { config } = ctx.source;
  const what = `partner ${ctx.source.id} (http)`;
  const children = config.children;
  if (children === undefined) throw new Error('fetchParentChildPage needs config.children');
  const childConfig: HttpJobConfig = { ...config, ...children, children: undefined };
  const shape = parentShape(config);
  // The child list's own page size, whatever room the stored page has left: the engine stores a
  // larger response over the pages after (ctx.limit), and a link keeps the size the first page
  // asked for, so that asking for the room left would page a whole child list by it.
  const p = children.pagination;
  const childLimit = p.type !== 'none' && p.limit !== undefined ? p.limit : ctx.limit;
  const s = decodeState(ctx.cursor, what);
  const warnings: string[] = [];
  let made = 0;
  /** A request's context: `pagesFetched` is the run's requests before it, so `read` bounds them. */
  const request = (cursor: string | null, list: HttpJobConfig, limit: number) => {
    const view: FetchContext<HttpJobConfig> = {
      ...ctx,
      cursor,
      limit,
      pagesFetched: ctx.pagesFetched + s.extra + made,
      source: { ...ctx.source, config: list },
    };
    made += 1;
    return view;
  };
  const page = (records: Keyed[], end?: string): FetchedPage<Keyed> => {
    s.extra += Math.max(0, made - 1);
    const done = s.current === undefined && s.queue.length === 0 && !s.more && s.pn === null;
    if (done && s.gone > 0 && !s.answered) {
      throw failure(
        'InvalidResponse',
        'CHILD_LISTS_NOT_FOUND',
        `${what}: the child list of every parent (${s.gone}) answered 404: check children.request`,
      );
    }
    if (done && s.unproven > 0 && !s.proven) {
      throw failure(
        'InvalidResponse',
        'NEXT_CURSOR_MISSING',
        `${what}: ${s.unproven} child lists ended on a full first page without a next cursor or link, which no child list of this run has held: check children.pagination (sources try), or give it totalPath`,
      );
    }
    return {
      records,
      nextCursor: done ? null : fitted(s, what),
      ...(done ? { end: `the parent list ended, and its last child list: ${end ?? 'it was empty'}` } : {}),
      ...(warnings.length === 0 ? {} : { warnings }),
    };
  };
  for (;;) {
    const current = s.current;
    if (current === undefined) {
      const next = s.queue.shift();
      if (next !== undefined) {
        s.current = { entry: next, at: null };
        continue;
      }
      if (s.started && !s.more && s.pn === null) return page([]);
      // The next parent page, or page `pp` again for the parents the cursor left out.
      const again = s.started && s.more;
      const at = again ? s.pp : s.started ? s.pn : null;
      const parents = await read(request(at, config, PARENTS_ASKED));
      warnings.push(...(parents.warnings ?? []));
      const entries = parents.records.map((r) => entryOf(r, shape, what));
      const from = again ? resumeIndex(entries, s, warnings) : 0;
      // `last` names a parent of page `pp` only: none of a new page is done yet.
      if (!again) {
        delete s.last;
        delete s.lastDone;
      }
      Object.assign(s, {
        started: true,
        pp: at,
        pn: parents.nextCursor,
        i: entries.length,
        more: false,
        queue: entries.slice(from),
      });
      continue;
    }
    const parentId = entryId(current.entry);
    let got: FetchedPage<Keyed>;
    try {
      got = await read(request(current.at, childConfig, childLimit), parentValues(current.entry, shape));
    } catch (err) {
      if (current.at !== null || !isPlain404(err)) throw err;
      // Its first page only: past it, a 404 would drop the records of the pages still to come.
      warnings.push(`parent ${parentId}: its child list answered 404 (the parent is gone); skipped`);
      s.gone += 1;
      s.current = undefined;
      // The parent list may have moved up by one past it (page numbers, offsets, and the links of
      // partners that page by them): page `pp` is read again before the next, for a parent that
      // moved into it.
      s.more = true;
      s.last = { id: parentId, gone: true };
      continue;
    }
    s.answered = true;
    if (got.nextCursor !== null) s.proven = true;
    for (const warning of got.warnings ?? []) {
      if (warning === FULL_FIRST_PAGE) s.unproven += 1;
      else warnings.push(warning);
    }
    const records = got.records.map((r) => ({
      // An empty child id stays empty, for the engine to refuse (RECORD_WITHOUT_ID).
      id: r.id === '' ? '' : `${parentId}${children.records.idSeparator}${r.id}`,
      record: r.record,
    }));
    if (got.nextCursor !== null) {
      if (records.length === 0) {
        // As the engine refuses of any list: a partner paging on without data would never end.
        throw failure(
          'InvalidResponse',
          'EMPTY_PAGE_WITH_CURSOR',
          `${what}: the child list of parent ${parentId}: an empty page with a next cursor`,
        );
      }
      s.current = { entry: current.entry, at: got.nextCursor };
      return page(records);
    }
    s.last = { id: parentId, gone: false };
    s.lastDone = parentId;
    s.current = undefined;
    if (records.length > 0) return page(records, got.end);
  }
}
