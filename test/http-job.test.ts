// The declarative `http` job's pure parts: its config (validation with one problem per path),
// templates and request building (auth placement, paging parameters). Its paging is in
// http-job-paging.test.ts; its runs against real processes in http-sources.e2e.test.ts and
// http-guardrails.e2e.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { FetchContext } from '../activities/job-api/index.ts';
import { type HttpJobConfig, httpJobConfigSchema } from '../jobs/http/config.ts';
import { buildRequest } from '../jobs/http/request.ts';
import { render, startOfDay } from '../jobs/http/template.ts';

const BASE = 'https://partner.example:8443/api';

function problems(config: unknown): string[] {
  const r = httpJobConfigSchema.safeParse(config);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

function ctxFor(
  config: unknown,
  over: Partial<FetchContext<HttpJobConfig>> = {},
): FetchContext<HttpJobConfig> {
  return {
    source: {
      id: 'acme',
      name: 'Acme',
      baseUrl: BASE,
      timezone: 'Europe/Paris',
      pageSize: 200,
      config: httpJobConfigSchema.parse(config),
    },
    businessDate: '2026-03-29',
    cursor: null,
    limit: 50,
    idempotencyKey: 'http:acme:2026-03-29:page:0',
    pagesFetched: 0,
    token: 'source-token',
    secret: (ref) => (ref === 'DF_SECRET_OTHER' ? 'other-secret' : undefined),
    oauthToken: () => Promise.reject(new Error('no OAuth2 credential in this test')),
    signal: AbortSignal.timeout(1000),
    http: undefined as never,
    log: undefined as never,
    ...over,
  };
}

describe('http job config', () => {
  test('a minimal config gets its defaults: GET, bearer from the source, records at the body, no paging', () => {
    const c = httpJobConfigSchema.parse({ request: { path: '/items' } });
    assert.deepEqual(
      [c.request.method, c.auth.type, c.records.path, c.records.id, c.pagination.type, c.limits.maxPages],
      ['GET', 'bearer', undefined, [['id']], 'none', 10_000],
    );
  });

  test('every problem is named by its path: secrets inline, unknown placeholders, credential headers, shapes', () => {
    const found = problems({
      request: {
        path: '/x/{tenant}',
        query: { d: '{date:hh}' },
        headers: { 'X-Api-Key': 'k' },
        body: { a: 1 },
      },
      auth: { type: 'api_key', name: 'key', secret: 'sk_live_123' },
      pagination: { type: 'cursor', path: 'meta..next' },
      limits: { maxPages: 0 },
      extra: true,
    });
    const paths = found.map((p) => p.split(':')[0]);
    for (const path of [
      'request.path',
      'request.query.d',
      'request.headers',
      'request.body',
      'auth.secret',
      'pagination.path',
      'limits.maxPages',
      '',
    ]) {
      assert.ok(paths.includes(path), `a problem at '${path}' in ${JSON.stringify(found)}`);
    }
    assert.ok(!found.join('\n').includes('sk_live_123'), 'the would-be secret is not echoed');
  });

  test('offset paging that ends on a short page must know the partner page size', () => {
    assert.deepEqual(problems({ request: { path: '/o' }, pagination: { type: 'offset' } }), [
      "pagination.limit: offset paging without totalPath needs limit (the partner's page size), or a short page could end the run early",
    ]);
    assert.deepEqual(
      problems({ request: { path: '/o' }, pagination: { type: 'offset', totalPath: 'total' } }),
      [],
    );
  });

  test('a cursor that may end by its absence needs a total, a stop flag or a limit the request sends', () => {
    const cursor = { type: 'cursor', path: 'paging.next.after', endWhen: ['absent'] };
    assert.deepEqual(problems({ request: { path: '/h' }, pagination: cursor }), [
      'pagination.endWhen: endWhen absent needs pagination.totalPath, hasMorePath or donePath, or a limit the request sends (limitParam or {limit}): else a misread cursor path would look like the last page',
    ]);
    for (const extra of [{ limitParam: 'limit' }, { totalPath: 'total' }, { hasMorePath: 'more' }]) {
      assert.deepEqual(problems({ request: { path: '/h' }, pagination: { ...cursor, ...extra } }), []);
    }
    assert.deepEqual(problems({ request: { path: '/h', query: { n: '{limit}' } }, pagination: cursor }), []);
  });

  test('a cursor sent by the request itself needs {cursor} somewhere', () => {
    assert.deepEqual(
      problems({ request: { path: '/s' }, pagination: { type: 'cursor', path: 'next', param: null } }),
      [
        'pagination.param: with param null, the request must send {cursor} itself (in its path, query, headers or body)',
      ],
    );
    assert.deepEqual(
      problems({
        request: { method: 'POST', path: '/s', body: { after: '{cursor}' } },
        pagination: { type: 'cursor', path: 'next', param: null },
      }),
      [],
    );
  });
});

describe('http job templates', () => {
  test('the business day in the source timezone, across a DST change, as ISO and epoch', () => {
    const v = {
      date: '2026-03-29',
      timeZone: 'Europe/Paris',
      sourceId: 's',
      cursor: null,
      page: null,
      offset: null,
      limit: 5,
    };
    assert.equal(
      render('{date}|{date:dd/MM/yyyy}|{dayStart}|{dayEnd}|{dayStartEpoch}|{cursor}', v),
      '2026-03-29|29/03/2026|2026-03-28T23:00:00.000Z|2026-03-29T22:00:00.000Z|1774738800|',
    );
    assert.equal(
      new Date(startOfDay('2026-12-01', 'America/New_York')).toISOString(),
      '2026-12-01T05:00:00.000Z',
    );
  });
});

describe('http job requests', () => {
  test('each auth kind puts the credential where it says, resolved from its reference', () => {
    const bearer = buildRequest(ctxFor({ request: { path: '/i' } }), { at: null, skip: 0 });
    assert.equal(bearer.headers.authorization, 'Bearer source-token');
    const header = buildRequest(
      ctxFor({
        request: { path: '/i' },
        auth: { type: 'api_key', name: 'X-Key', secret: 'DF_SECRET_OTHER' },
      }),
      { at: null, skip: 0 },
    );
    assert.equal(header.headers['x-key'], 'other-secret');
    assert.equal(header.headers.authorization, undefined);
    const query = buildRequest(
      ctxFor({ request: { path: '/i' }, auth: { type: 'api_key', in: 'query', name: 'api_key' } }),
      {
        at: null,
        skip: 0,
      },
    );
    assert.equal(query.url.searchParams.get('api_key'), 'source-token');
    const basic = buildRequest(
      ctxFor({ request: { path: '/i' }, auth: { type: 'basic', username: 'demo' } }),
      {
        at: null,
        skip: 0,
      },
    );
    assert.equal(basic.headers.authorization, `Basic ${Buffer.from('demo:source-token').toString('base64')}`);
    assert.throws(
      () =>
        buildRequest(
          ctxFor({ request: { path: '/i' }, auth: { type: 'bearer', secret: 'DF_SECRET_UNSET' } }),
          { at: null, skip: 0 },
        ),
      (e: Error & { type?: string }) => e.type === 'PermissionDenied',
    );
  });

  test('the path is appended to the base URL; paging parameters per style; an empty value is left out', () => {
    const cfg = (pagination: unknown) => ({
      request: { path: '/accounts/{sourceId}/items', query: { day: '{date}', after: '{cursor}' } },
      pagination,
    });
    const first = buildRequest(
      ctxFor(cfg({ type: 'cursor', path: 'next', limitParam: 'limit', limit: 20 })),
      { at: null, skip: 0 },
    );
    assert.equal(
      first.url.href,
      'https://partner.example:8443/api/accounts/acme/items?day=2026-03-29&limit=20',
    );
    const later = buildRequest(ctxFor(cfg({ type: 'cursor', path: 'next' })), { at: 'c2', skip: 0 });
    assert.equal(later.url.searchParams.get('cursor'), 'c2');
    assert.equal(later.url.searchParams.get('after'), 'c2');
    const page = buildRequest(ctxFor(cfg({ type: 'page_number', limit: 30 })), { at: 3, skip: 0 });
    assert.deepEqual(
      [page.url.searchParams.get('page'), page.url.searchParams.get('per_page'), page.asked],
      ['3', '30', 30],
    );
    const offset = buildRequest(ctxFor(cfg({ type: 'offset', totalPath: 'total' })), { at: null, skip: 0 });
    assert.deepEqual(
      [offset.url.searchParams.get('offset'), offset.url.searchParams.get('limit')],
      ['0', '50'],
    );
    const link = buildRequest(ctxFor(cfg({ type: 'next_url', path: 'next' })), {
      at: `${BASE}/n?t=9`,
      skip: 0,
    });
    assert.equal(link.url.href, `${BASE}/n?t=9`);
  });

  test('a POST renders its JSON body, numbers staying numbers', () => {
    const r = buildRequest(
      ctxFor({
        request: {
          method: 'POST',
          path: '/search',
          body: { date: '{date}', size: '{limit}', after: '{cursor}' },
        },
        pagination: { type: 'cursor', path: 'next', param: null },
      }),
      { at: 'k', skip: 0 },
    );
    assert.deepEqual(r.body, { date: '2026-03-29', size: 50, after: 'k' });
  });

  test('a stored next link is checked again before it is followed, and auth without any secret is refused', () => {
    const link = ctxFor({ request: { path: '/i' }, pagination: { type: 'next_url', path: 'next' } });
    assert.throws(
      () => buildRequest(link, { at: 'https://elsewhere.example/api/i?p=2', skip: 0 }),
      (e: Error & { details?: { code: string }[] }) => e.details?.[0]?.code === 'OFF_ORIGIN_NEXT_URL',
    );
    assert.throws(
      () => buildRequest(ctxFor({ request: { path: '/i' } }, { token: undefined }), { at: null, skip: 0 }),
      (e: Error & { type?: string }) => e.type === 'PermissionDenied',
    );
    const open = buildRequest(
      ctxFor({ request: { path: '/i' }, auth: { type: 'none' } }, { token: undefined }),
      {
        at: null,
        skip: 0,
      },
    );
    assert.equal(open.headers.authorization, undefined);
  });
});
