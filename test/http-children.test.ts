// The declarative `http` job's parent → child lists, the pure parts: the `children` config and its
// checks, `{parent.<path>}` placeholders, the run's cursor (kept within the engine's length, parents
// left out and found again), and whole runs of `fetchParentChildPage` over an in-memory partner —
// every child record once under `<parentId>:<childId>`, no empty page with a cursor, a gone parent
// skipped, and a run resumed from any cursor it returned asking nothing of a parent done before.
// Its run on real Temporal, PostgreSQL and HTTP is http-children.e2e.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { failure, type FetchContext, type FetchedPage } from '../activities/job-api/index.ts';
import { MAX_CURSOR_LENGTH } from '../contract/input-limits.ts';
import {
  decodeState,
  encodeState,
  type Entry,
  entryId,
  fetchParentChildPage,
  fitted,
  type Keyed,
  type ListReader,
  resumeIndex,
  START,
  type State,
} from '../jobs/http/children.ts';
import { type HttpJobConfig, httpJobConfigSchema } from '../jobs/http/config.ts';
import { decodePosition, encodePosition, FULL_FIRST_PAGE, nextPosition } from '../jobs/http/paging.ts';
import { buildRequest } from '../jobs/http/request.ts';
import { renderJson } from '../jobs/http/template.ts';

const BASE = 'https://partner.example/api';
const what = 'partner acme (http)';
const codeOf = (code: string) => (e: Error & { details?: { code: string }[] }) =>
  e.details?.[0]?.code === code;

function problems(config: unknown): string[] {
  const r = httpJobConfigSchema.safeParse(config);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

const ORDERS = {
  request: { path: '/accounts', query: { date: '{date}' } },
  records: { path: 'data' },
  pagination: { type: 'page_number', limit: 3 },
  children: {
    request: { path: '/accounts/{parent.id}/orders' },
    records: { path: 'orders' },
    pagination: { type: 'cursor', path: 'next', limitParam: 'limit', limit: 2 },
  },
};

function ctxFor(
  config: unknown,
  over: Partial<FetchContext<HttpJobConfig>> = {},
): FetchContext<HttpJobConfig> {
  return {
    source: {
      id: 'acme',
      name: 'Acme',
      baseUrl: BASE,
      timezone: 'UTC',
      pageSize: 200,
      config: httpJobConfigSchema.parse(config),
    },
    businessDate: '2026-03-29',
    cursor: null,
    limit: 50,
    idempotencyKey: 'http:acme:2026-03-29:page:0',
    pagesFetched: 0,
    token: 'source-token',
    secret: () => undefined,
    oauthToken: () => Promise.reject(new Error('no OAuth2 credential in this test')),
    signal: AbortSignal.timeout(5000),
    http: undefined as never,
    log: undefined as never,
    ...over,
  };
}

describe('http children config', () => {
  test('a parent → child config parses, its child list with the defaults of any list', () => {
    const c = httpJobConfigSchema.parse(ORDERS);
    assert.deepEqual(
      [
        c.children?.request.method,
        c.children?.records.id,
        c.children?.records.idSeparator,
        c.children?.pagination.type,
      ],
      ['GET', [['id']], ':', 'cursor'],
    );
  });

  test('{parent.…} only in children.request, with a path that parses; the child request must name its parent', () => {
    assert.deepEqual(problems({ ...ORDERS, request: { path: '/accounts/{parent.id}' } }), [
      'request.path: placeholder {parent.id} is only known in children.request',
    ]);
    assert.deepEqual(problems({ request: { path: '/x', query: { a: '{parent.id}' } } }), [
      'request.query.a: placeholder {parent.id} is only known in children.request',
    ]);
    const bad = problems({ ...ORDERS, children: { request: { path: '/a/{parent.x..y}/o' } } });
    assert.equal(bad.length, 1);
    assert.match(bad[0] ?? '', /^children\.request\.path: placeholder \{parent\.x\.\.y\}: path 'x\.\.y'/);
    assert.deepEqual(problems({ ...ORDERS, children: { request: { path: '/orders' } } }), [
      'children.request.path: children.request must name its parent, e.g. /accounts/{parent.id}/orders',
    ]);
  });

  test("the child list's paging is checked as the parent list's is", () => {
    const child = (pagination: unknown, request: unknown = { path: '/a/{parent.id}' }) =>
      problems({ ...ORDERS, children: { request, pagination } });
    assert.deepEqual(child({ type: 'offset' }), [
      "children.pagination.limit: offset paging without totalPath needs limit (the partner's page size), or a short page could end a child list early",
    ]);
    assert.deepEqual(child({ type: 'cursor', path: 'n', param: null }), [
      'children.pagination.param: with param null, the request must send {cursor} itself (in its path, query, headers or body)',
    ]);
    assert.deepEqual(
      child({ type: 'cursor', path: 'n', param: null }, { path: '/a/{parent.id}/{cursor}' }),
      [],
    );
  });
});

describe('http children placeholders', () => {
  test('a parent value is percent-encoded in the path, as is in the query, and keeps its type alone in a body', () => {
    const ctx = ctxFor({
      ...ORDERS,
      children: {
        request: {
          method: 'POST',
          path: '/repos/{parent.owner.login}/{parent.name}/issues',
          query: { self: '{parent.links.self}' },
          body: { account: '{parent.id}', label: 'acct-{parent.id}' },
        },
      },
    });
    const children = ctx.source.config.children;
    assert.ok(children);
    const view = { ...ctx, source: { ...ctx.source, config: { ...ctx.source.config, ...children } } };
    const parent = { 'owner.login': 'a b/c', name: 'r?1', 'links.self': 'https://x/y?z=1', id: 42 };
    const req = buildRequest(view, { at: null, skip: 0 }, undefined, parent);
    assert.equal(req.url.pathname, '/api/repos/a%20b%2Fc/r%3F1/issues');
    assert.equal(req.url.searchParams.get('self'), 'https://x/y?z=1');
    assert.deepEqual(req.body, { account: 42, label: 'acct-42' });
    assert.deepEqual(
      renderJson('{parent.id}', {
        ...view.source,
        date: '',
        timeZone: 'UTC',
        sourceId: 'a',
        cursor: null,
        page: null,
        offset: null,
        limit: 1,
        parent,
      }),
      42,
    );
  });
});

describe('http children cursor', () => {
  const state = (over: Partial<State>): State => ({ ...START, started: true, queue: [], ...over });

  test('a cursor decodes to the state it was made of; one this job did not write is refused', () => {
    const s = state({
      pp: '{"at":2}',
      pn: '{"at":3}',
      i: 3,
      queue: [7, 8],
      current: { entry: ['6', 'six'], at: '{"at":"c2"}' },
      extra: 4,
      gone: 1,
      answered: true,
    });
    assert.deepEqual(decodeState(encodeState(s), what), s);
    assert.deepEqual(decodeState(null, what), { ...START, queue: [] });
    for (const bad of [
      '{"at":"x"}',
      '{"p":null,"n":null,"i":-1,"q":[]}',
      '{"p":null,"n":null,"i":0,"q":[],"k":1}',
      'nope',
    ]) {
      assert.throws(() => decodeState(bad, what), codeOf('CURSOR_INVALID'), bad);
    }
  });

  test('a parent page of 100 numeric ids fits the engine cursor whole; longer parents are left out from its end', () => {
    const ids = Array.from({ length: 100 }, (_, i) => 1_000_000 + i);
    const whole = state({
      pp: '{"at":2}',
      pn: '{"at":3}',
      i: 100,
      queue: ids.slice(1),
      current: { entry: ids[0] ?? 0, at: '{"at":"abcdefgh"}' },
    });
    const cursor = fitted(whole, what);
    assert.ok(cursor.length <= MAX_CURSOR_LENGTH, `${cursor.length}`);
    assert.deepEqual([whole.queue.length, whole.more, whole.i], [99, false, 100]);

    const long: Entry[] = ids.map((id) => [String(id), `acme/repository-with-a-long-name-${id}`]);
    const cut = state({
      pp: '{"at":2}',
      pn: null,
      i: 100,
      queue: long.slice(1),
      current: { entry: long[0] ?? '', at: null },
    });
    const short = fitted(cut, what);
    assert.ok(short.length <= MAX_CURSOR_LENGTH);
    assert.ok(cut.queue.length > 0 && cut.queue.length < 99, `${cut.queue.length} kept`);
    assert.deepEqual([cut.more, cut.i], [true, 1 + cut.queue.length], 'i is just past the parents kept');
    assert.deepEqual(decodeState(short, what).queue, long.slice(1, cut.i));

    const hopeless = state({ pp: JSON.stringify({ at: 'x'.repeat(MAX_CURSOR_LENGTH) }), pn: null });
    assert.throws(() => fitted(hopeless, what), codeOf('CURSOR_TOO_LONG'));
  });

  test('page p read again: the parents after the last one done, where it is or wherever it moved; from the start if it left', () => {
    const page = (...ids: string[]) => ids.map((id): Entry => [id, id]);
    const s = state({ i: 2, more: true, last: { id: 'b', gone: false }, lastDone: 'b' });
    assert.equal(resumeIndex(page('a', 'b', 'c', 'd'), s, []), 2);
    assert.equal(resumeIndex(page('new', 'a', 'b', 'c', 'd'), s, []), 3, 'a parent added before it');
    assert.equal(resumeIndex(page('b', 'c', 'd'), s, []), 1, 'a parent before it deleted');
    const warnings: string[] = [];
    assert.equal(resumeIndex(page('a', 'c', 'd'), s, warnings), 0, 'it left: read again, never skipped');
    assert.match(warnings[0] ?? '', /parent b left its parent page/);
  });
});

/** An in-memory partner: parents paged by page number, each parent's children by a cursor. */
function memoryPartner(
  children: Record<string, number>,
  opts: {
    parentPage?: number;
    childPage?: number;
    gone?: Set<string>;
    goneLater?: string;
    /** Parents deleted (from the parent list too) when their child list is first asked for. */
    deleteOnRead?: Set<string>;
  } = {},
) {
  const parents = Object.keys(children);
  const parentPage = opts.parentPage ?? 3;
  const childPage = opts.childPage ?? 2;
  const log: string[] = [];
  const read: ListReader = (ctx, parent) => {
    const at = decodePosition(ctx.cursor, what).at;
    const page = typeof at === 'number' ? at : 0;
    if (ctx.pagesFetched >= ctx.source.config.limits.maxPages) {
      throw failure('InvalidResponse', 'MAX_PAGES_EXCEEDED', 'limit');
    }
    const out = (records: Keyed[], more: boolean): Promise<FetchedPage<Keyed>> =>
      Promise.resolve({
        records,
        nextCursor: more ? encodePosition({ at: page + 1, skip: 0 }) : null,
        // As paging.ts says of a child list's full first page that has no next cursor.
        ...(parent !== undefined && page === 0 && !more && records.length === childPage
          ? { warnings: [FULL_FIRST_PAGE] }
          : {}),
      });
    if (parent === undefined) {
      log.push(`parents@${page}`);
      const slice = parents.slice(page * parentPage, (page + 1) * parentPage);
      return out(
        slice.map((id) => ({ id, record: { id, name: `n-${id}` } })),
        (page + 1) * parentPage < parents.length,
      );
    }
    const id = String(parent.id);
    log.push(`${id}@${page}`);
    if (opts.deleteOnRead?.delete(id)) parents.splice(parents.indexOf(id), 1);
    if (!parents.includes(id) || opts.gone?.has(id) || (opts.goneLater === id && page > 0)) {
      throw failure('NotFound', 'HTTP_404', `${what}: not found (404)`);
    }
    const n = children[id] ?? 0;
    const ids = Array.from({ length: n }, (_, i) => i + 1).slice(page * childPage, (page + 1) * childPage);
    return out(
      ids.map((c) => ({ id: String(c), record: { n: c } })),
      (page + 1) * childPage < n,
    );
  };
  return { read, log };
}

/** Calls the job until the end, as the engine does; every cursor it returned, in order. */
async function runAll(
  config: unknown,
  read: ListReader,
  from: { cursor: string | null; pagesFetched: number } = { cursor: null, pagesFetched: 0 },
) {
  const ids: string[] = [];
  const cursors: string[] = [];
  const warnings: string[] = [];
  let { cursor, pagesFetched } = from;
  let end: string | undefined;
  for (let calls = 0; calls < 1000; calls++) {
    const page = await fetchParentChildPage(ctxFor(config, { cursor, pagesFetched }), read);
    assert.ok(page.records.length > 0 || page.nextCursor === null, 'no empty page with a cursor');
    assert.ok(page.nextCursor === null || page.nextCursor.length <= MAX_CURSOR_LENGTH);
    ids.push(...page.records.map((r) => r.id));
    warnings.push(...(page.warnings ?? []));
    pagesFetched += 1;
    if (page.nextCursor === null) {
      end = page.end;
      break;
    }
    cursors.push(page.nextCursor);
    cursor = page.nextCursor;
  }
  return { ids, cursors, warnings, end, calls: pagesFetched - from.pagesFetched };
}

const expectedIds = (children: Record<string, number>, except: string[] = []) =>
  Object.entries(children)
    .filter(([id]) => !except.includes(id))
    .flatMap(([id, n]) => Array.from({ length: n }, (_, i) => `${id}:${i + 1}`));

describe('http children runs (in-memory partner)', () => {
  const CHILDREN = { a: 3, b: 0, c: 5, d: 1, e: 0, f: 0, g: 4 };

  test('every child record once, keyed by parent; parents without children skipped within a call; every request counted', async () => {
    const { read, log } = memoryPartner(CHILDREN);
    const run = await runAll(ORDERS, read);
    assert.deepEqual(run.ids, expectedIds(CHILDREN));
    assert.equal(new Set(run.ids).size, run.ids.length);
    assert.equal(
      new Set(run.cursors).size,
      run.cursors.length,
      'no cursor twice (the engine refuses a loop)',
    );
    assert.match(run.end ?? '', /^the parent list ended/);
    // 3 parent pages; child pages: a 2, b 1, c 3, d 1, e 1, f 1, g 2.
    assert.equal(log.length, 3 + 11);
    const last = decodeState(run.cursors.at(-1) ?? null, what);
    assert.equal(run.calls + last.extra, log.length, 'the calls and the extra requests make every request');
  });

  test('a parent whose child list answers 404 on its first page is skipped, with a warning; on a later page, the run fails', async () => {
    const gone = memoryPartner(CHILDREN, { gone: new Set(['c']) });
    const run = await runAll(ORDERS, gone.read);
    assert.deepEqual(run.ids, expectedIds(CHILDREN, ['c']));
    assert.deepEqual(run.warnings, ['parent c: its child list answered 404 (the parent is gone); skipped']);
    const later = memoryPartner(CHILDREN, { goneLater: 'c' });
    await assert.rejects(runAll(ORDERS, later.read), codeOf('HTTP_404'));
    // Deleted from the list too, as it was read: the parents after it move up a page number.
    const shifted = memoryPartner(CHILDREN, { deleteOnRead: new Set(['b']) });
    const moved = await runAll(ORDERS, shifted.read);
    assert.deepEqual(moved.ids, expectedIds(CHILDREN, ['b']), 'd moved up into page 0: read, not skipped');
    assert.deepEqual(
      shifted.log.filter((r) => r.startsWith('parents@')),
      ['parents@0', 'parents@0', 'parents@1'],
      'page 0 read again after the parent gone',
    );
    const all = memoryPartner({ a: 1, b: 2 }, { gone: new Set(['a', 'b']) });
    await assert.rejects(runAll(ORDERS, all.read), codeOf('CHILD_LISTS_NOT_FOUND'));
  });

  test('resumed from any cursor it returned, a run asks nothing of a parent done before, and completes', async () => {
    const many = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`p${i + 1}`, (i * 7) % 6]));
    const whole = await runAll(ORDERS, memoryPartner(many).read);
    const order = Object.keys(many);
    for (const [k, cursor] of whole.cursors.entries()) {
      const partner = memoryPartner(many);
      const resumed = await runAll(ORDERS, partner.read, { cursor, pagesFetched: k + 1 });
      assert.deepEqual(resumed.ids, whole.ids.slice(whole.ids.length - resumed.ids.length), 'the rest, once');
      assert.ok(resumed.ids.length > 0);
      const s = decodeState(cursor, what);
      const at =
        s.current === undefined
          ? undefined
          : String(Array.isArray(s.current.entry) ? s.current.entry[0] : s.current.entry);
      const next = s.queue[0];
      const done =
        at !== undefined
          ? order.indexOf(at)
          : next !== undefined
            ? order.indexOf(entryId(next))
            : order.indexOf(s.last?.id ?? '') + 1;
      assert.ok(done > 0 || k === 0, `cursor ${k} says where it is`);
      for (const request of partner.log.filter((r) => !r.startsWith('parents@'))) {
        assert.ok(order.indexOf(request.split('@')[0] ?? '') >= done, `cursor ${k}: ${request} asked again`);
      }
    }
  });

  test('parents left out of the cursor are read again from their page, continuing after the last one done', async () => {
    const config = {
      ...ORDERS,
      pagination: { type: 'page_number', limit: 100 },
      children: { ...ORDERS.children, request: { path: '/a/{parent.id}/{parent.name}' } },
    };
    const ids = Array.from(
      { length: 60 },
      (_, i) => [`parent-${String(i).padStart(3, '0')}`, 1 + (i % 3)] as const,
    );
    const many = Object.fromEntries(ids);
    const partner = memoryPartner(many, { parentPage: 100 });
    const run = await runAll(config, partner.read);
    assert.deepEqual(run.ids, expectedIds(many));
    const parentReads = partner.log.filter((r) => r.startsWith('parents@'));
    assert.ok(parentReads.length > 1, `page 0 read again (${parentReads.length} reads)`);
    assert.ok(parentReads.every((r) => r === 'parents@0'));
    const childReads = partner.log.filter((r) => !r.startsWith('parents@'));
    assert.equal(new Set(childReads).size, childReads.length, 'no child page asked twice');
  });

  test('a child list ending on a full first page is the end once another child list held a next cursor; else the run fails', async () => {
    const proven = await runAll(ORDERS, memoryPartner({ a: 2, b: 3, c: 2 }).read);
    assert.deepEqual(proven.ids, ['a:1', 'a:2', 'b:1', 'b:2', 'b:3', 'c:1', 'c:2']);
    assert.deepEqual(proven.warnings, []);
    await assert.rejects(
      runAll(ORDERS, memoryPartner({ a: 2, b: 1, c: 2 }).read),
      codeOf('NEXT_CURSOR_MISSING'),
    );
    const link = httpJobConfigSchema.parse({
      ...ORDERS,
      pagination: { type: 'link_header', limitParam: 'n', limit: 2 },
    });
    const full = { body: [], headers: {}, records: [{}, {}], url: new URL(`${BASE}/a/1/o`), asked: 2 };
    const step = nextPosition(link.pagination, { at: null, skip: 0 }, full, {
      baseUrl: BASE,
      what,
      childList: true,
    });
    assert.deepEqual([step.next, step.warnings], [null, [FULL_FIRST_PAGE]]);
    assert.throws(
      () => nextPosition(link.pagination, { at: null, skip: 0 }, full, { baseUrl: BASE, what }),
      codeOf('NEXT_CURSOR_MISSING'),
      'a list of its own still refuses it at once',
    );
  });

  test('limits.maxPages counts every request of a call, not only the calls', async () => {
    const { read } = memoryPartner({ a: 0, b: 0, c: 0, d: 0, e: 1 });
    const config = { ...ORDERS, limits: { maxPages: 5 } };
    await assert.rejects(runAll(config, read), codeOf('MAX_PAGES_EXCEEDED'));
    assert.deepEqual(
      (
        await runAll(
          { ...ORDERS, limits: { maxPages: 7 } },
          memoryPartner({ a: 0, b: 0, c: 0, d: 0, e: 1 }).read,
        )
      ).ids,
      ['e:1'],
    );
  });
});
