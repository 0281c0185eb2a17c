// The declarative `http` job's paging, a pure part: positions, each style's next position, the
// same-origin rule for next links, record ids. The rest of its pure parts are in http-job.test.ts;
// its runs against real processes in http-sources.e2e.test.ts and http-guardrails.e2e.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordIdOf, withoutQueryCredential } from '../jobs/http/index.ts';
import {
  decodePosition,
  encodePosition,
  linkTarget,
  nextPosition,
  sameOriginUrl,
} from '../jobs/http/paging.ts';

const BASE = 'https://partner.example:8443/api';

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
    assert.deepEqual(
      nextPosition(
        { type: 'cursor', path: 'meta.next', param: 'c' },
        start,
        res({ meta: { next: 'n1' } }),
        ctx,
      ),
      {
        at: 'n1',
        skip: 0,
      },
    );
    assert.equal(
      nextPosition(
        { type: 'cursor', path: 'meta.next', param: 'c' },
        start,
        res({ meta: { next: null } }),
        ctx,
      ),
      null,
    );
    assert.deepEqual(
      nextPosition(
        { type: 'next_url', path: 'links.next' },
        start,
        res({ links: { next: '/api/items?p=2' } }),
        ctx,
      ),
      {
        at: 'https://partner.example:8443/api/items?p=2',
        skip: 0,
      },
    );
    const link =
      '<https://partner.example:8443/api/items?p=1>; rel="first", <https://partner.example:8443/api/items?p=3>; rel="next"';
    assert.equal(linkTarget(link, 'next'), 'https://partner.example:8443/api/items?p=3');
    const pageNo = {
      type: 'page_number' as const,
      param: 'page',
      start: 1,
      step: 1,
      limitParam: null,
      limit: 10,
      totalPagesPath: 'pages',
    };
    assert.deepEqual(nextPosition(pageNo, { at: 1, skip: 0 }, res({ pages: 3 }), ctx), { at: 2, skip: 0 });
    assert.equal(nextPosition(pageNo, { at: 3, skip: 0 }, res({ pages: 3 }), ctx), null);
    assert.equal(
      nextPosition({ ...pageNo, totalPagesPath: undefined }, { at: 9, skip: 0 }, res({}, {}, []), ctx),
      null,
    );
    const offset = { type: 'offset' as const, param: 'offset', limitParam: 'limit' };
    assert.deepEqual(nextPosition(offset, { at: 20, skip: 0 }, res({}, {}, Array(10).fill({}), 10), ctx), {
      at: 30,
      skip: 0,
    });
    assert.equal(
      nextPosition(offset, { at: 20, skip: 0 }, res({}, {}, Array(7).fill({}), 10), ctx),
      null,
      'a short page ends',
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
    const records = { id: ['account.id', 'seq'], idSeparator: ':' };
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
    const offset = { type: 'offset' as const, param: 'offset', limitParam: 'limit', totalPath: 'total' };
    assert.deepEqual(
      nextPosition(offset, { at: 0, skip: 0 }, res({ total: 60 }, {}, Array(20).fill({}), 50), ctx),
      {
        at: 20,
        skip: 0,
      },
    );
    assert.equal(
      nextPosition(offset, { at: 40, skip: 0 }, res({ total: 60 }, {}, Array(20).fill({}), 50), ctx),
      null,
    );
  });

  test('a numeric id past 2^53 is refused (it was rounded when parsed), a safe one is kept', () => {
    const records = { id: 'n', idSeparator: ':' };
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
