// The declarative `http` job's paging, a pure part: positions, each style's next position, the
// same-origin rule for next links, record ids. The rest of its pure parts are in http-job.test.ts;
// its runs against real processes in http-sources.e2e.test.ts and http-guardrails.e2e.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { httpJobConfigSchema } from '../jobs/http/config.ts';
import { recordIdOf, recordsOf, withoutQueryCredential } from '../jobs/http/index.ts';
import {
  decodePosition,
  encodePosition,
  linkTarget,
  nextPosition,
  type Position,
  sameOriginUrl,
} from '../jobs/http/paging.ts';

const BASE = 'https://partner.example:8443/api';

/** A pagination as a validated config holds it (paths parsed). */
const pg = (pagination: Record<string, unknown>) =>
  httpJobConfigSchema.parse({ request: { path: '/x', body: { c: '{cursor}' }, method: 'POST' }, pagination })
    .pagination;
/** A records section as a validated config holds it. */
const recs = (records: Record<string, unknown>) =>
  httpJobConfigSchema.parse({ request: { path: '/x' }, records }).records;
const codeOf = (code: string) => (e: Error & { details?: { code: string }[] }) =>
  e.details?.[0]?.code === code;

describe('http job paging', () => {
  const what = 'partner acme (http)';
  const res = (
    body: unknown,
    headers: Record<string, string> = {},
    records: unknown[] = [{}],
    asked = 10,
  ) => ({
    body,
    headers,
    records,
    url: new URL(`${BASE}/items?x=1`),
    asked,
  });

  test('positions round-trip; a cursor this job did not write is refused', () => {
    for (const p of [
      { at: 'c', skip: 0 },
      { at: 4, skip: 10 },
      { at: null, skip: 20 },
    ]) {
      assert.deepEqual(decodePosition(encodePosition(p), what), p);
    }
    assert.equal(encodePosition({ at: null, skip: 0 }), null);
    assert.throws(
      () => decodePosition('not-json', what),
      (e: Error & { type?: string }) => e.type === 'InvalidInput',
    );
  });

  test('each style finds its next position, or the end', () => {
    const start = { at: null, skip: 0 };
    const ctx = { baseUrl: BASE, what };
    const next = (p: Record<string, unknown>, body: unknown, here: Position = start, r = res(body)) =>
      nextPosition(pg(p), here, r, ctx).next;
    const cursor = { type: 'cursor', path: 'meta.next', param: 'c' };
    assert.deepEqual(next(cursor, { meta: { next: 'n1' } }), { at: 'n1', skip: 0 });
    assert.equal(next(cursor, { meta: { next: null } }), null);
    assert.deepEqual(next({ type: 'next_url', path: 'links.next' }, { links: { next: '/api/items?p=2' } }), {
      at: 'https://partner.example:8443/api/items?p=2',
      skip: 0,
    });
    const link =
      '<https://partner.example:8443/api/items?p=1>; rel="first", <https://partner.example:8443/api/items?p=3>; rel="next"';
    assert.equal(linkTarget(link, 'next'), 'https://partner.example:8443/api/items?p=3');
    const pageNo = {
      type: 'page_number',
      param: 'page',
      limitParam: null,
      limit: 10,
      totalPagesPath: 'pages',
    };
    assert.deepEqual(next(pageNo, { pages: 3 }, { at: 1, skip: 0 }), { at: 2, skip: 0 });
    assert.equal(next(pageNo, { pages: 3 }, { at: 3, skip: 0 }), null);
    assert.equal(
      next({ ...pageNo, totalPagesPath: undefined }, {}, { at: 9, skip: 0 }, res({}, {}, [])),
      null,
    );
    const offset = { type: 'offset', param: 'offset', limitParam: 'limit', limit: 10 };
    assert.deepEqual(next(offset, {}, { at: 20, skip: 0 }, res({}, {}, Array(10).fill({}), 10)), {
      at: 30,
      skip: 0,
    });
    const short = nextPosition(pg(offset), { at: 20, skip: 0 }, res({}, {}, Array(7).fill({}), 10), ctx);
    assert.equal(short.next, null, 'a short page ends');
    assert.equal(short.end, 'a short page: 7 of 10 asked');
  });

  test('a cursor ends paging only in a way endWhen names; a misread path fails instead of ending', () => {
    const ctx = { baseUrl: BASE, what };
    const step = (p: Record<string, unknown>, body: unknown, records: unknown[] = [{}]) =>
      nextPosition(
        pg({ type: 'cursor', param: 'c', limitParam: 'limit', ...p }),
        { at: null, skip: 0 },
        res(body, {}, records),
        ctx,
      );
    // Default endWhen: null and ''.
    assert.equal(step({ path: 'meta.next' }, { meta: { next: null } }).end, 'meta.next was null');
    assert.equal(step({ path: 'meta.next' }, { meta: { next: '' } }).end, 'meta.next was empty');
    assert.throws(() => step({ path: 'meta.next' }, { meta: {} }), codeOf('PATH_NOT_FOUND'));
    assert.throws(
      () => step({ path: 'meta.next' }, { meta: { next: false } }),
      codeOf('NEXT_CURSOR_MISSING'),
    );
    assert.throws(
      () => step({ path: 'meta.next', endWhen: ['null'] }, { meta: { next: '' } }),
      codeOf('NEXT_CURSOR_MISSING'),
    );
    // absent, when the partner leaves the cursor out on its last page (HubSpot leaves out `paging`).
    assert.equal(
      step({ path: 'paging.next.after', endWhen: ['absent'] }, { results: [] }).end,
      'paging.next.after was absent',
    );
    // …but not on a full page when the path has held nothing in the run yet: a wrong path and a last
    // page look alike there, and only the last page may end the run.
    const full = Array.from({ length: 10 }, () => ({}));
    assert.throws(
      () => step({ path: 'paging.next.after', endWhen: ['absent'] }, { results: full }, full),
      codeOf('NEXT_CURSOR_MISSING'),
    );
    const hubspot = pg({
      type: 'cursor',
      param: 'after',
      path: 'paging.next.after',
      endWhen: ['absent'],
      limitParam: 'limit',
    });
    const first = nextPosition(
      hubspot,
      { at: null, skip: 0 },
      res({ paging: { next: { after: '10' } } }, {}, full),
      ctx,
    );
    assert.deepEqual(first.next, { at: '10', skip: 0 });
    assert.equal(
      nextPosition(hubspot, { at: '10', skip: 0 }, res({ results: full }, {}, full), ctx).end,
      'paging.next.after was absent',
      'a full last page after pages that held the cursor',
    );
    // The OData incident: a key with dots written as a dotted path is refused, whatever endWhen says.
    const odata = { value: [{}], '@odata.nextLink': 'https://partner.example:8443/api/items?$skiptoken=2' };
    assert.throws(
      () => step({ path: '@odata.nextLink', endWhen: ['absent'] }, odata),
      (e: Error & { details?: { code: string }[] }) =>
        e.details?.[0]?.code === 'PATH_NOT_FOUND' && e.message.includes("write ['@odata.nextLink']"),
    );
    const right = nextPosition(
      pg({ type: 'next_url', path: "['@odata.nextLink']", endWhen: ['absent'], limitParam: '$top' }),
      { at: null, skip: 0 },
      res(odata),
      ctx,
    );
    assert.equal(right.next?.at, 'https://partner.example:8443/api/items?$skiptoken=2');
  });

  test('a stop flag ends paging whatever the cursor, and a flag saying more needs a cursor', () => {
    const ctx = { baseUrl: BASE, what };
    const stripe = pg({
      type: 'cursor',
      param: 'starting_after',
      path: 'data[-1].id',
      hasMorePath: 'has_more',
    });
    const page = (hasMore: boolean) => res({ data: [{ id: 'a' }, { id: 'b' }], has_more: hasMore });
    assert.deepEqual(nextPosition(stripe, { at: null, skip: 0 }, page(true), ctx).next, { at: 'b', skip: 0 });
    assert.deepEqual(nextPosition(stripe, { at: null, skip: 0 }, page(false), ctx), {
      next: null,
      end: 'has_more was false',
    });
    assert.throws(
      () => nextPosition(stripe, { at: null, skip: 0 }, res({ data: [], has_more: true }), ctx),
      codeOf('PATH_NOT_FOUND'),
    );
    assert.throws(
      () => nextPosition(stripe, { at: null, skip: 0 }, res({ data: [{ id: 'a' }] }), ctx),
      codeOf('PATH_NOT_FOUND'),
      'a stop flag the body does not hold is not a false one',
    );
    const salesforce = pg({
      type: 'next_url',
      path: 'nextRecordsUrl',
      donePath: 'done',
      endWhen: ['absent'],
    });
    assert.equal(
      nextPosition(salesforce, { at: null, skip: 0 }, res({ done: true }), ctx).end,
      'done was true',
    );
    const graph = pg({
      type: 'cursor',
      param: null,
      path: 'pageInfo.endCursor',
      hasMorePath: 'pageInfo.hasNextPage',
    });
    assert.throws(
      () =>
        nextPosition(
          graph,
          { at: null, skip: 0 },
          res({ pageInfo: { endCursor: null, hasNextPage: true } }),
          ctx,
        ),
      codeOf('NEXT_CURSOR_MISSING'),
    );
  });

  test('a stated total must be received exactly: fewer at the end, or more at any page, fails the run', () => {
    const ctx = { baseUrl: BASE, what };
    const odata = pg({
      type: 'next_url',
      path: "['@odata.nextLink']",
      endWhen: ['absent'],
      totalPath: "['@odata.count']",
    });
    const first = nextPosition(
      odata,
      { at: null, skip: 0 },
      res({ '@odata.count': 5, '@odata.nextLink': '/api/p2' }, {}, [{}, {}, {}]),
      ctx,
    );
    assert.deepEqual(first.next, {
      at: 'https://partner.example:8443/api/p2',
      skip: 0,
      n: 3,
    });
    const second: Position = { at: 'https://partner.example:8443/api/p2', skip: 0, n: 3 };
    const done = nextPosition(odata, second, res({ '@odata.count': 5 }, {}, [{}, {}]), ctx);
    assert.deepEqual(done, { next: null, end: "['@odata.nextLink'] was absent; total 5 received" });
    assert.throws(
      () => nextPosition(odata, second, res({ '@odata.count': 5 }, {}, [{}]), ctx),
      codeOf('TOTAL_MISMATCH'),
    );
    assert.throws(
      () =>
        nextPosition(
          odata,
          second,
          res({ '@odata.count': 5, '@odata.nextLink': '/api/p3' }, {}, [{}, {}, {}]),
          ctx,
        ),
      codeOf('TOTAL_MISMATCH'),
    );
    assert.deepEqual(decodePosition(encodePosition({ at: 'x', skip: 0, n: 3 }), what), {
      at: 'x',
      skip: 0,
      n: 3,
    });
    const offset = pg({ type: 'offset', totalPath: 'total' });
    assert.throws(
      () => nextPosition(offset, { at: 20, skip: 0 }, res({ total: 60 }, {}, []), ctx),
      codeOf('TOTAL_MISMATCH'),
      'an empty page before the stated total is not the end',
    );
  });

  test('an empty page that says there is more ends paging only with emptyPage: end', () => {
    const ctx = { baseUrl: BASE, what };
    const x = pg({
      type: 'cursor',
      path: 'meta.next_token',
      endWhen: ['absent'],
      limitParam: 'max_results',
      emptyPage: 'end',
    });
    assert.deepEqual(
      nextPosition(x, { at: null, skip: 0 }, res({ meta: { next_token: 't' } }, {}, []), ctx),
      {
        next: null,
        end: 'an empty page (pagination.emptyPage: end)',
      },
    );
    const strict = pg({
      type: 'cursor',
      path: 'meta.next_token',
      endWhen: ['absent'],
      limitParam: 'max_results',
    });
    assert.deepEqual(
      nextPosition(strict, { at: null, skip: 0 }, res({ meta: { next_token: 't' } }, {}, []), ctx).next,
      { at: 't', skip: 0 },
      'the engine refuses it then (EMPTY_PAGE_WITH_CURSOR)',
    );
  });

  test('an empty last page ends a last-record cursor too, and a Link header missing from a full first page is refused', () => {
    const ctx = { baseUrl: BASE, what };
    const stripe = pg({
      type: 'cursor',
      param: 'starting_after',
      path: 'data[-1].id',
      limitParam: 'limit',
      emptyPage: 'end',
    });
    assert.equal(
      nextPosition(stripe, { at: 'a', skip: 0 }, res({ data: [] }, {}, []), ctx).end,
      'an empty page (pagination.emptyPage: end)',
    );
    const github = pg({ type: 'link_header', limitParam: 'per_page', limit: 10 });
    const full = Array.from({ length: 10 }, () => ({}));
    assert.throws(
      () => nextPosition(github, { at: null, skip: 0 }, res(full, {}, full), ctx),
      codeOf('NEXT_CURSOR_MISSING'),
    );
    const link = '<https://partner.example:8443/api/items?page=2>; rel="next"';
    const first = nextPosition(github, { at: null, skip: 0 }, res(full, { link }, full), ctx);
    assert.deepEqual(first.next, {
      at: 'https://partner.example:8443/api/items?page=2',
      skip: 0,
    });
    assert.equal(
      nextPosition(github, { at: 'x', skip: 0 }, res(full, {}, full), ctx).end,
      'no Link header entry with rel="next"',
      'a full last page after pages that had the link',
    );
  });

  test('records: at a path, each element read at records.item (GraphQL edges), the path named when missing', () => {
    const edges = recs({ path: 'data.search.edges', item: 'node' });
    assert.deepEqual(
      recordsOf({ data: { search: { edges: [{ node: { id: 1 } }, { node: { id: 2 } }] } } }, edges, what),
      [{ id: 1 }, { id: 2 }],
    );
    assert.throws(
      () => recordsOf({ data: { search: { edges: [{ cursor: 'x' }] } } }, edges, what),
      codeOf('PAGE_SHAPE'),
    );
    assert.throws(
      () => recordsOf({ data: {} }, edges, what),
      (e: Error) => e.message.includes('data.search.edges') && e.message.includes('data has no keys'),
    );
  });

  test('a next link on another origin is refused: scheme, host and port all count', () => {
    const here = new URL(`${BASE}/items`);
    for (const other of [
      'http://partner.example:8443/api/x',
      'https://evil.example:8443/api/x',
      'https://partner.example/api/x',
    ]) {
      assert.throws(
        () => sameOriginUrl(other, here, BASE, what),
        (e: Error & { details?: { code: string }[] }) => e.details?.[0]?.code === 'OFF_ORIGIN_NEXT_URL',
      );
    }
    assert.equal(sameOriginUrl('?p=2#frag', here, BASE, what), 'https://partner.example:8443/api/items?p=2');
  });

  test('record ids: a path, or several joined; none when a part is missing', () => {
    const records = recs({ id: ['account.id', 'seq'] });
    assert.equal(recordIdOf({ account: { id: 'a1' }, seq: 7 }, records), 'a1:7');
    assert.equal(recordIdOf({ account: {}, seq: 7 }, records), '');
  });

  test('a link echoing the query credential back is kept without it (a cursor is stored and in history)', () => {
    const auth = { type: 'api_key' as const, in: 'query' as const, name: 'api_key' };
    assert.equal(withoutQueryCredential(`${BASE}/items?page=2&api_key=s3cret`, auth), `${BASE}/items?page=2`);
    assert.equal(
      withoutQueryCredential(`${BASE}/items?api_key=s3cret`, { type: 'bearer' }),
      `${BASE}/items?api_key=s3cret`,
    );
  });

  test('an offset total decides over a short page: a partner capping its pages below the ask is not the end', () => {
    const ctx = { baseUrl: BASE, what };
    const offset = pg({ type: 'offset', param: 'offset', limitParam: 'limit', totalPath: 'total' });
    assert.deepEqual(
      nextPosition(offset, { at: 0, skip: 0 }, res({ total: 60 }, {}, Array(20).fill({}), 50), ctx).next,
      { at: 20, skip: 0 },
    );
    assert.equal(
      nextPosition(offset, { at: 40, skip: 0 }, res({ total: 60 }, {}, Array(20).fill({}), 50), ctx).next,
      null,
    );
  });

  test('a numeric id past 2^53 is refused (it was rounded when parsed), a safe one is kept', () => {
    const records = recs({ id: 'n' });
    assert.equal(recordIdOf({ n: 9007199254740991 }, records), '9007199254740991');
    assert.throws(
      () => recordIdOf({ n: 2 ** 60 }, records),
      (e: Error & { details?: { code: string }[] }) => e.details?.[0]?.code === 'RECORD_ID_NOT_EXACT',
    );
  });

  test('stripping the query credential leaves the rest of a (signed) link byte for byte', () => {
    const auth = { type: 'api_key' as const, in: 'query' as const, name: 'api_key' };
    const signed = `${BASE}/items?sig=a/b:c~%2F&api_key=s3cret&x=1+2`;
    assert.equal(withoutQueryCredential(signed, auth), `${BASE}/items?sig=a/b:c~%2F&x=1+2`);
    assert.equal(withoutQueryCredential(`${BASE}/items?sig=a/b:c~`, auth), `${BASE}/items?sig=a/b:c~`);
  });
});
