// The demo partner's imitations of twelve widely used list APIs, over real HTTP: each walked to its
// documented end yields exactly the partner's own list, one request per page; each refuses a
// wrong credential in its own words; each hostile habit, switched on, shows as its API shows it.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { API_NAMES, type ApiName } from '../partner/apis/index.ts';
import { SLACK_CHANNEL } from '../partner/apis/slack.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';
import { type ApiResponse, send, walk, type Walker, walkers } from './helpers/api-walk.ts';

const DATE = '2026-11-20';
const RECORDS = 23;
const SIZE = 5;

let partner: PartnerServer;
let walk_: Record<ApiName, Walker>;

before(async () => {
  partner = await startPartner({
    port: 0,
    apiRecordCount: (_api, scope) => (scope === '2026-11-21' ? 0 : RECORDS),
  });
  walk_ = walkers(partner.url, partner.apis.tokens);
});
after(() => partner?.close());
beforeEach(() => {
  partner.apis.habits.clear();
  partner.apis.requests.clear();
});

type Json = Record<string, unknown>;
const obj = (v: unknown) => (v ?? {}) as Json;

async function adminIds(api: ApiName, date: string): Promise<string[]> {
  const res = await fetch(`${partner.url}/_admin/apis/${api}/ids?date=${date}`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { ids: string[] }).ids;
}

/** The first page of `api` with `headers` in place of its credential. */
async function firstWith(api: ApiName, headers: Record<string, string>): Promise<ApiResponse> {
  const req = walk_[api].first(DATE, SIZE);
  return send({ ...req, headers: { ...req.headers, ...headers } });
}

/** Whether `api` serves its records in pages of `SIZE` when asked (Salesforce's batches are 200..2000). */
const pagesOf = (api: ApiName) => (api === 'salesforce' ? 1 : Math.ceil(RECORDS / SIZE));

describe('partner: imitated list APIs', () => {
  it('each API walked to its documented end yields the partner list once, in list order, one request per page', async () => {
    for (const api of API_NAMES) {
      partner.apis.requests.clear();
      const ids = await adminIds(api, DATE);
      assert.equal(ids.length, RECORDS, api);
      assert.equal(new Set(ids).size, RECORDS, `${api}: ids are unique`);
      const done = await walk(walk_[api], DATE, SIZE);
      assert.ok(done.ended, `${api}: the walk ends (${done.pages.map((p) => p.status).join(',')})`);
      assert.deepEqual(done.ids, ids, `${api}: every id once, in list order`);
      assert.equal(done.pages.length, pagesOf(api), api);
      assert.equal(
        partner.apis.requests.count({ api, status: 200 }),
        pagesOf(api),
        `${api}: one request per page`,
      );
      assert.deepEqual(
        [...new Set(partner.apis.requests.entries({ api }).map((r) => r.scope))],
        [api === 'hubspot' || api === 'zendesk' ? 'account' : DATE],
        `${api}: the scope is logged`,
      );
      const empty = await walk(walk_[api], '2026-11-21', SIZE);
      if (api !== 'hubspot' && api !== 'zendesk')
        assert.deepEqual([empty.ids, empty.ended], [[], true], `${api}: an empty day`);
    }
    assert.notDeepEqual(
      await adminIds('stripe', '2026-11-22'),
      await adminIds('stripe', DATE),
      'each date its own records',
    );
  });

  it('the default collections are 150..400 records per scope, the same on every partner', async () => {
    const other = await startPartner({ port: 0 });
    try {
      for (const api of ['graph', 'hubspot'] as const) {
        const ids = other.apis.ids(api, DATE);
        assert.ok(ids.length >= 150 && ids.length <= 400, `${api}: ${ids.length}`);
        assert.deepEqual(other.apis.ids(api, DATE), ids);
      }
    } finally {
      await other.close();
    }
  });

  it('a missing or wrong credential gets each API its own refusal', async () => {
    const wrong = { authorization: 'Bearer wrong-token', 'x-shopify-access-token': 'wrong' };
    const expected: Record<ApiName, [number, (body: Json) => unknown]> = {
      graph: [401, (b) => obj(b.error).code === 'InvalidAuthenticationToken'],
      stripe: [401, (b) => /^Invalid API Key provided: \*+oken$/.test(String(obj(b.error).message))],
      notion: [401, (b) => b.code === 'unauthorized' && b.object === 'error'],
      slack: [200, (b) => b.ok === false && b.error === 'invalid_auth'],
      'github-graphql': [401, (b) => b.message === 'Bad credentials'],
      'github-rest': [401, (b) => b.message === 'Bad credentials'],
      salesforce: [401, (b) => (b as unknown as Json[])[0]?.errorCode === 'INVALID_SESSION_ID'],
      hubspot: [401, (b) => b.category === 'INVALID_AUTHENTICATION'],
      zendesk: [401, (b) => b.error === "Couldn't authenticate you"],
      jira: [401, (b) => Array.isArray(b.errorMessages)],
      shopify: [401, (b) => String(b.errors).startsWith('[API] Invalid API key or access token')],
      x: [401, (b) => b.title === 'Unauthorized'],
    };
    for (const api of API_NAMES) {
      const res = await firstWith(api, wrong);
      const [status, check] = expected[api];
      assert.equal(res.status, status, api);
      assert.ok(check(obj(res.body)), `${api}: ${JSON.stringify(res.body)}`);
    }
    const slack = await firstWith('slack', { authorization: '' });
    assert.deepEqual([slack.status, obj(slack.body).error], [200, 'not_authed']);
    assert.equal(partner.apis.requests.count({ authorized: false }), API_NAMES.length + 1);
    assert.equal(partner.apis.requests.count({ authorized: true }), 0, 'refused before anything else');
  });

  it('graph: @odata.nextLink absolute and left out at the end, @odata.count, server-driven pages, 429 with Retry-After', async () => {
    const first = await send(walk_.graph.first(DATE, SIZE));
    const body = obj(first.body);
    assert.equal(body['@odata.count'], RECORDS);
    assert.match(
      String(body['@odata.nextLink']),
      /^http:\/\/127\.0\.0\.1:\d+\/apis\/graph\/v1\.0\/users\/me\/messages\?.*\$skiptoken=/,
    );
    const big = await walk(walk_.graph, DATE, 100);
    assert.equal(big.pages.length, 1);
    assert.ok(!('@odata.nextLink' in obj(big.pages[0]?.body)), 'left out, not null');
    partner.apis.habits.add({ api: 'graph', habit: 'server_page_size', pageSize: 10, times: 'always' });
    const driven = await walk(walk_.graph, DATE, SIZE);
    assert.deepEqual(
      driven.pages.map((p) => (obj(p.body).value as unknown[]).length),
      [10, 10, 3],
      'larger than $top',
    );
    assert.deepEqual(driven.ids, await adminIds('graph', DATE));
    partner.apis.habits.add({ api: 'graph', habit: 'throttled', waitS: 2 });
    const throttled = await send(walk_.graph.first(DATE, SIZE));
    assert.deepEqual([throttled.status, throttled.headers.get('retry-after')], [429, '2']);
    assert.equal(obj(obj(throttled.body).error).code, 'TooManyRequests');
  });

  it('stripe: has_more with starting_after, limit 1..100, 429 rate_limit, a loop on starting_after', async () => {
    const over = await send(walk_.stripe.first(DATE, 101));
    assert.equal(over.status, 400);
    assert.equal(obj(obj(over.body).error).param, 'limit');
    partner.apis.habits.add({ api: 'stripe', habit: 'rate_limited' });
    const limited = await send(walk_.stripe.first(DATE, SIZE));
    assert.deepEqual(
      [limited.status, obj(obj(limited.body).error).code, limited.headers.get('retry-after')],
      [429, 'rate_limit', null],
    );
    const page1 = await send(walk_.stripe.first(DATE, SIZE));
    partner.apis.habits.add({ api: 'stripe', habit: 'loop' });
    const next = walk_.stripe.next(page1, walk_.stripe.first(DATE, SIZE));
    assert.ok(next);
    const looped = await send(next);
    const data = obj(looped.body).data as Json[];
    assert.equal(obj(looped.body).has_more, true);
    assert.equal(
      data[data.length - 1]?.id,
      new URL(next.url).searchParams.get('starting_after'),
      'the same last customer',
    );
    const unknown = await send({
      ...next,
      url: next.url.replace(/starting_after=[^&]+/, 'starting_after=cus_nope'),
    });
    assert.equal(obj(obj(unknown.body).error).code, 'resource_missing');
  });

  it('notion: start_cursor null refused, Notion-Version required, page_size ≤ 100, 429 with Retry-After', async () => {
    const req = walk_.notion.first(DATE, SIZE);
    const withNull = await send({ ...req, body: { ...obj(req.body), start_cursor: null } });
    assert.equal(withNull.status, 400);
    assert.deepEqual(
      [obj(withNull.body).code, obj(withNull.body).message],
      [
        'validation_error',
        'body failed validation: body.start_cursor should be a string or `undefined`, instead was `null`.',
      ],
    );
    const noVersion = await send({
      ...req,
      headers: { authorization: `Bearer ${partner.apis.tokens.notion}` },
    });
    assert.deepEqual([noVersion.status, obj(noVersion.body).code], [400, 'missing_version']);
    const big = await send({ ...req, body: { ...obj(req.body), page_size: 101 } });
    assert.deepEqual([big.status, obj(big.body).code], [400, 'validation_error']);
    partner.apis.habits.add({ api: 'notion', habit: 'rate_limited', date: DATE });
    const limited = await send(req);
    assert.deepEqual(
      [limited.status, obj(limited.body).code, limited.headers.get('retry-after')],
      [429, 'rate_limited', '1'],
    );
    const last = await walk(walk_.notion, DATE, 100);
    assert.deepEqual(
      [obj(last.pages[0]?.body).next_cursor, obj(last.pages[0]?.body).has_more],
      [null, false],
    );
  });

  it('slack: next_cursor "" at the end, short pages that are not the end, ok:false inside a 200, 429 with Retry-After', async () => {
    const whole = await walk(walk_.slack, DATE, 100);
    assert.deepEqual(obj(whole.pages[0]?.body).response_metadata, { next_cursor: '' });
    partner.apis.habits.add({ api: 'slack', habit: 'short_pages', pageSize: 2, times: 'always' });
    const short = await walk(walk_.slack, DATE, SIZE);
    assert.equal(short.pages.length, Math.ceil(RECORDS / 2));
    assert.deepEqual(short.ids, await adminIds('slack', DATE));
    partner.apis.habits.clear();
    partner.apis.habits.add({ api: 'slack', habit: 'invalid_auth', afterRequests: 1 });
    const revoked = await walk(walk_.slack, DATE, SIZE);
    assert.deepEqual(
      revoked.pages.map((p) => p.status),
      [200, 200],
    );
    assert.deepEqual(revoked.pages[1]?.body, { ok: false, error: 'invalid_auth' });
    partner.apis.habits.add({ api: 'slack', habit: 'ratelimited' });
    const limited = await send(walk_.slack.first(DATE, SIZE));
    assert.deepEqual(
      [limited.status, limited.headers.get('retry-after'), obj(limited.body).error],
      [429, '1', 'ratelimited'],
    );
    const other = walk_.slack.first(DATE, SIZE);
    const wrongChannel = await send({ ...other, url: other.url.replace(SLACK_CHANNEL, 'C0OTHER') });
    assert.deepEqual([wrongChannel.status, obj(wrongChannel.body).error], [200, 'channel_not_found']);
  });

  it('github-graphql: nodes or edges, errors inside 200s (first over 100, timeout, RATE_LIMITED with its headers)', async () => {
    const req = walk_['github-graphql'].first(DATE, SIZE);
    const vars = obj(obj(req.body).variables);
    const excessive = await send({ ...req, body: { ...obj(req.body), variables: { ...vars, first: 101 } } });
    assert.equal(excessive.status, 200);
    assert.equal(obj((obj(excessive.body).errors as Json[])[0]).type, 'EXCESSIVE_PAGINATION');
    const edges = await send({
      ...req,
      body: {
        ...obj(req.body),
        query: String(obj(req.body).query).replace(
          'nodes { id number title }',
          'edges { cursor node { id } }',
        ),
      },
    });
    const connection = obj(obj(obj(obj(edges.body).data).repository).issues);
    assert.equal((connection.edges as Json[]).length, SIZE);
    assert.ok(!('nodes' in connection));
    partner.apis.habits.add({ api: 'github-graphql', habit: 'query_timeout' });
    const timeout = await send(req);
    assert.equal(timeout.status, 200);
    assert.match(String(obj((obj(timeout.body).errors as Json[])[0]).message), /timeout/);
    partner.apis.habits.add({ api: 'github-graphql', habit: 'rate_limited', waitS: 3 });
    const limited = await send(req);
    assert.equal(limited.status, 200);
    assert.equal(obj((obj(limited.body).errors as Json[])[0]).type, 'RATE_LIMITED');
    assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');
    const reset = Number(limited.headers.get('x-ratelimit-reset')) - Date.now() / 1000;
    assert.ok(reset > 2 && reset <= 4, `reset in ${reset} s`);
  });

  it('github-rest: the array body with a Link header, per_page capped at 100, 403 rate limit, 301 for the old name', async () => {
    const first = await send(walk_['github-rest'].first(DATE, SIZE));
    assert.ok(Array.isArray(first.body));
    assert.match(String(first.headers.get('link')), /rel="next".*rel="last"/);
    const capped = await send(walk_['github-rest'].first(DATE, 500));
    assert.equal((capped.body as unknown[]).length, RECORDS);
    assert.equal(capped.headers.get('link'), null, 'one page: no Link');
    partner.apis.habits.add({ api: 'github-rest', habit: 'rate_limited' });
    const limited = await send(walk_['github-rest'].first(DATE, SIZE));
    assert.deepEqual([limited.status, limited.headers.get('x-ratelimit-remaining')], [403, '0']);
    const req = walk_['github-rest'].first(DATE, SIZE);
    const moved = await send({
      ...req,
      url: req.url.replace('/repos/acme/ledger/', '/repos/acme/old-ledger/'),
    });
    assert.equal(moved.status, 301);
    const location = String(moved.headers.get('location'));
    assert.match(
      location,
      /\/apis\/github-rest\/repositories\/4242\/issues\?labels=2026-11-20&state=all&per_page=5$/,
    );
    const followed = await walk(
      { ...walk_['github-rest'], first: () => ({ ...req, url: location }) },
      DATE,
      SIZE,
    );
    assert.deepEqual(
      followed.ids,
      await adminIds('github-rest', DATE),
      'the new path pages on by its own links',
    );
  });

  it('salesforce: done and a relative nextRecordsUrl, batches larger than asked, errors as arrays', async () => {
    partner.apis.habits.add({ api: 'salesforce', habit: 'server_batch', pageSize: 10 });
    const req = walk_.salesforce.first(DATE, SIZE);
    const batched = await walk(walk_.salesforce, DATE, SIZE);
    assert.deepEqual(
      batched.pages.map((p) => (obj(p.body).records as unknown[]).length),
      [10, 10, 3],
    );
    assert.match(
      String(obj(batched.pages[0]?.body).nextRecordsUrl),
      /^\/apis\/salesforce\/services\/data\/v60\.0\/query\/01g[0-9a-f]+-10$/,
    );
    assert.deepEqual(batched.ids, await adminIds('salesforce', DATE));
    const last = obj(batched.pages[2]?.body);
    assert.deepEqual([last.done, 'nextRecordsUrl' in last, last.totalSize], [true, false, RECORDS]);
    const asked = await send({ ...req, headers: { ...req.headers, 'sforce-query-options': 'batchSize=5' } });
    assert.equal(
      (obj(asked.body).records as unknown[]).length,
      RECORDS,
      'batchSize below 200 is served as 200',
    );
    partner.apis.habits.add({ api: 'salesforce', habit: 'request_limit' });
    const limit = await send(req);
    assert.deepEqual(
      [limit.status, obj((limit.body as Json[])[0]).errorCode],
      [403, 'REQUEST_LIMIT_EXCEEDED'],
    );
    const malformed = await send({ ...req, url: req.url.replace(/q=[^&]+/, 'q=SELECT+Id+FROM+Contact') });
    assert.deepEqual(
      [malformed.status, obj((malformed.body as Json[])[0]).errorCode],
      [400, 'MALFORMED_QUERY'],
    );
  });

  it('hubspot: paging left out on the last page, limit ≤ 100, 429 with its own headers and no Retry-After', async () => {
    const done = await walk(walk_.hubspot, DATE, SIZE);
    assert.ok(!('paging' in obj(done.pages[done.pages.length - 1]?.body)));
    assert.match(
      String(obj(obj(obj(done.pages[0]?.body).paging).next).link),
      /^http:\/\/127\.0\.0\.1:\d+\/apis\/hubspot\//,
    );
    const over = await send(walk_.hubspot.first(DATE, 101));
    assert.deepEqual([over.status, obj(over.body).category], [400, 'VALIDATION_ERROR']);
    partner.apis.habits.add({ api: 'hubspot', habit: 'rate_limited', waitS: 2 });
    const limited = await send(walk_.hubspot.first(DATE, SIZE));
    assert.equal(limited.status, 429);
    assert.deepEqual(
      [
        limited.headers.get('retry-after'),
        limited.headers.get('x-hubspot-ratelimit-remaining'),
        limited.headers.get('x-hubspot-ratelimit-interval-milliseconds'),
        obj(limited.body).errorType,
      ],
      [null, '0', '2000', 'RATE_LIMIT'],
    );
  });

  it('zendesk: has_more ends the list, a cursor left on the last page leads to an empty one, offset fallback, 429', async () => {
    const done = await walk(walk_.zendesk, DATE, SIZE);
    assert.deepEqual(obj(done.pages[done.pages.length - 1]?.body).meta, {
      has_more: false,
      after_cursor: null,
      before_cursor: obj(obj(done.pages[done.pages.length - 1]?.body).meta).before_cursor,
    });
    partner.apis.habits.add({ api: 'zendesk', habit: 'cursor_on_last_page' });
    const kept = await walk(walk_.zendesk, DATE, 100);
    const meta = obj(obj(kept.pages[0]?.body).meta);
    assert.equal(meta.has_more, false);
    assert.equal(typeof meta.after_cursor, 'string');
    const beyond = await send({
      ...walk_.zendesk.first(DATE, 100),
      url: String(obj(obj(kept.pages[0]?.body).links).next),
    });
    assert.deepEqual([obj(beyond.body).tickets, obj(obj(beyond.body).meta).has_more], [[], false]);
    const offset = await send({
      ...walk_.zendesk.first(DATE, SIZE),
      url: `${partner.url}/apis/zendesk/api/v2/tickets.json`,
    });
    assert.deepEqual(
      [(obj(offset.body).tickets as unknown[]).length, obj(offset.body).next_page],
      [RECORDS, null],
    );
    partner.apis.habits.add({ api: 'zendesk', habit: 'rate_limited' });
    const limited = await send(walk_.zendesk.first(DATE, SIZE));
    assert.deepEqual([limited.status, limited.headers.get('retry-after')], [429, '1']);
  });

  it('jira: maxResults capped below what was asked (short pages before the end), total, 429', async () => {
    partner.apis.habits.add({ api: 'jira', habit: 'max_results_cap', pageSize: 4, times: 'always' });
    const capped = await walk(walk_.jira, DATE, 10);
    assert.deepEqual(
      capped.pages.map((p) => obj(p.body).maxResults),
      [4, 4, 4, 4, 4, 4],
    );
    assert.deepEqual(capped.ids, await adminIds('jira', DATE));
    partner.apis.habits.add({ api: 'jira', habit: 'rate_limited' });
    const limited = await send(walk_.jira.first(DATE, 10));
    assert.deepEqual([limited.status, limited.headers.get('retry-after')], [429, '1']);
    assert.ok(!Number.isNaN(Date.parse(String(limited.headers.get('x-ratelimit-reset')))), 'an ISO reset');
  });

  it('shopify: edges with cursors, the cost extension, THROTTLED inside a 200', async () => {
    const first = await send(walk_.shopify.first(DATE, SIZE));
    const cost = obj(obj(obj(first.body).extensions).cost);
    assert.equal(obj(cost.throttleStatus).maximumAvailable, 2000);
    partner.apis.habits.add({ api: 'shopify', habit: 'throttled' });
    const throttled = await send(walk_.shopify.first(DATE, SIZE));
    assert.equal(throttled.status, 200);
    assert.ok(!('data' in obj(throttled.body)));
    assert.equal(obj(obj((obj(throttled.body).errors as Json[])[0]).extensions).code, 'THROTTLED');
    assert.equal(obj(obj(obj(throttled.body).extensions).cost).actualQueryCost, null);
  });

  it('x: next_token absent at the end, an empty last page carrying a next_token, 429 with x-rate-limit-reset', async () => {
    const done = await walk(walk_.x, DATE, SIZE);
    assert.ok(!('next_token' in obj(obj(done.pages[done.pages.length - 1]?.body).meta)));
    partner.apis.habits.add({ api: 'x', habit: 'empty_last_page' });
    const empty = await walk(walk_.x, DATE, SIZE);
    assert.deepEqual(empty.ids, await adminIds('x', DATE));
    assert.equal(empty.pages.length, Math.ceil(RECORDS / SIZE) + 2);
    assert.deepEqual(Object.keys(obj(empty.pages[5]?.body)), ['meta'], 'no data on an empty page');
    assert.equal(obj(obj(empty.pages[5]?.body).meta).result_count, 0);
    assert.equal(typeof obj(obj(empty.pages[5]?.body).meta).next_token, 'string');
    assert.deepEqual(obj(empty.pages[6]?.body), { meta: { result_count: 0 } });
    const few = await send(walk_.x.first(DATE, 4));
    assert.equal(few.status, 400);
    partner.apis.habits.add({ api: 'x', habit: 'rate_limited' });
    const limited = await send(walk_.x.first(DATE, SIZE));
    assert.deepEqual([limited.status, limited.headers.get('x-rate-limit-remaining')], [429, '0']);
    assert.ok(Number(limited.headers.get('x-rate-limit-reset')) > Date.now() / 1000);
  });

  it('admin: lists the APIs and habits, switches habits over HTTP, refuses an unknown one, logs requests', async () => {
    const listed = (await (await fetch(`${partner.url}/_admin/apis`)).json()) as {
      apis: { name: string; habits: Json }[];
    };
    assert.deepEqual(
      listed.apis.map((a) => a.name),
      [...API_NAMES],
    );
    const add = (spec: unknown) =>
      fetch(`${partner.url}/_admin/apis/habits`, { method: 'POST', body: JSON.stringify(spec) });
    const bad = await add({ api: 'stripe', habit: 'no_such' });
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { message: string }).message, /stripe has no habit "no_such"/);
    const ok = await add({ api: 'stripe', habit: 'rate_limited', date: DATE, afterRequests: 1 });
    assert.equal(ok.status, 201);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await send(walk_.stripe.first(DATE, SIZE))).status);
    assert.deepEqual(statuses, [200, 429, 200], 'after one request, once');
    const log = (await (await fetch(`${partner.url}/_admin/apis/requests?api=stripe`)).json()) as {
      requests: Json[];
    };
    assert.deepEqual(
      log.requests.map((r) => r.habit ?? null),
      [null, 'rate_limited', null],
    );
    assert.equal(
      (await fetch(`${partner.url}/_admin/apis/graph/ids`)).status,
      400,
      'a dated API needs a date',
    );
    assert.equal(
      (await fetch(`${partner.url}/_admin/apis/hubspot/ids`)).status,
      200,
      'an undated one does not',
    );
    assert.equal((await fetch(`${partner.url}/apis/nope/x`)).status, 404);
  });
});
