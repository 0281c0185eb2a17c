// The demo partner's catalog faults over real HTTP: the rate-limit reset header (epoch or seconds),
// next links moved to another origin, run-wide loops per style, and the read faults every route has.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { FaultSpec } from '../partner/faults.ts';
import type { PartnerRecord } from '../partner/records.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';
import { adminIds, BEARER, catalogGet as get, parseLinks, walkCatalog } from './helpers/catalog-client.ts';
import { waitFor } from './helpers/outbox.ts';

const DATE = '2026-11-20';

void describe('partner: catalog faults', () => {
  let partner: PartnerServer;
  let other: PartnerServer;
  before(async () => {
    partner = await startPartner({ port: 0, catalogRecordCount: () => 45, recordCount: () => 10 });
    other = await startPartner({ port: 0 });
  });
  beforeEach(() => {
    partner.faults.clear();
    partner.ledger.clear();
    other.ledger.clear();
  });
  after(() => Promise.all([partner.close(), other.close()]));

  void it('status with rateLimitReset: X-RateLimit-Reset as an epoch second or as seconds, Remaining 0, on every read route', async () => {
    partner.faults.add({
      route: 'catalog',
      style: 'cursor',
      kind: 'status',
      status: 429,
      rateLimitReset: 30,
    });
    const earliest = Math.ceil(Date.now() / 1000) + 30;
    const epoch = await get(partner, `bearer/cursor/items?date=${DATE}`);
    const latest = Math.ceil(Date.now() / 1000) + 30;
    assert.equal(epoch.status, 429);
    const reset = Number(epoch.headers.get('x-ratelimit-reset'));
    assert.ok(reset >= earliest && reset <= latest, `${reset} is now + 30 s as an epoch second`);
    assert.equal(epoch.headers.get('x-ratelimit-remaining'), '0');
    assert.equal(epoch.headers.get('retry-after'), null, 'no Retry-After unless asked for');
    const seconds = {
      kind: 'status',
      status: 429,
      rateLimitReset: 12,
      rateLimitResetStyle: 'seconds',
    } as const;
    partner.faults.add({ route: 'catalog', ...seconds });
    partner.faults.add({ route: 'rates', ...seconds });
    partner.faults.add({ route: 'records', ...seconds });
    const urls = [
      `${partner.url}/catalog/bearer/next-url/items?date=${DATE}`,
      `${partner.url}/rates?date=${DATE}`,
      `${partner.url}/sources/acme/records?date=${DATE}`,
    ];
    for (const url of urls) {
      const res = await fetch(url, { headers: BEARER });
      assert.equal(res.status, 429, url);
      assert.equal(res.headers.get('x-ratelimit-reset'), '12', url);
      assert.equal(res.headers.get('x-ratelimit-remaining'), '0', url);
    }
    assert.equal(partner.ledger.count({ status: 429, fault: 'status' }), 4);
  });

  void it('off_origin: next-url and link-header link the next page on another host; other styles leave the fault waiting', async () => {
    partner.faults.add({ route: 'catalog', kind: 'off_origin', url: other.url, times: 2 });
    const cursor = await get(partner, `bearer/cursor/items?date=${DATE}&limit=10`);
    assert.equal(cursor.status, 200, 'a style without links is not hit');
    assert.equal(partner.faults.list()[0]?.remaining, 2);
    const page = await get(partner, `bearer/next-url/items?date=${DATE}&limit=10`);
    const next = (page.body.links as { next: string }).next;
    const own = new URL(next);
    assert.equal(own.origin, other.url, 'an absolute URL on the other origin');
    assert.equal(own.pathname, '/catalog/bearer/next-url/items');
    assert.deepEqual([own.searchParams.get('date'), own.searchParams.get('limit')], [DATE, '10']);
    assert.equal((page.body.results as PartnerRecord[]).length, 10, 'the page itself is normal');
    const res = await fetch(`${partner.url}/catalog/bearer/link-header/items?date=${DATE}&per_page=10`, {
      headers: BEARER,
    });
    const links = parseLinks(res.headers.get('link'));
    assert.equal(links.first?.startsWith(`${partner.url}/`), true, 'rel="first" stays home');
    assert.equal(new URL(links.next ?? '').origin, other.url);
    assert.equal((await fetch(links.next ?? '', { headers: BEARER })).status, 200);
    assert.equal(
      other.ledger.count({ style: 'link-header' }),
      1,
      'a client following it calls the other host',
    );
    assert.deepEqual(
      partner.ledger.entries({ fault: 'off_origin' }).map((e) => e.style),
      ['next-url', 'link-header'],
    );
  });

  void it('loop on cursor and next-url: the third page links back to the second, A→B→A, while the fault lasts', async () => {
    const ids = await adminIds(partner, DATE);
    for (const style of ['cursor', 'next-url'] as const) {
      const plain = await walkCatalog(partner.url, style, { date: DATE, size: 10 });
      const [first, a, b, c, d] = plain.steps.map((s) => s.position);
      assert.ok(first === null && a && b && a !== b && plain.steps.length === 5);
      partner.faults.add({ route: 'catalog', style, position: b, kind: 'loop', times: 2 });
      const walk = await walkCatalog(partner.url, style, { date: DATE, size: 10 });
      assert.deepEqual(
        walk.steps.map((s) => s.position),
        [null, a, b, a, b, a, b, c, d],
        `${style}: a run-wide loop, no page asked twice in a row`,
      );
      assert.deepEqual(walk.steps[2]?.ids, walk.steps[4]?.ids, 'a looped page is the normal page');
      assert.deepEqual([...new Set(walk.ids)], ids, 'once the fault is spent the walk ends');
      assert.equal(partner.ledger.count({ style, fault: 'loop' }), 2);
    }
    partner.faults.add({ route: 'catalog', style: 'cursor', kind: 'loop' });
    const last = await get(partner, `bearer/cursor/items?date=${DATE}&limit=100`);
    const nextCursor = (last.body.meta as { next_cursor: string | null }).next_cursor;
    assert.equal(nextCursor, null, 'a list of one page cannot loop');
  });

  void it('loop on page-number and offset: page 1 again, with totals claiming more', async () => {
    partner.faults.add({ route: 'catalog', kind: 'loop', times: 2, position: '5' });
    const first = await get(partner, `bearer/page-number/items?date=${DATE}&per_page=10`);
    const page = await get(partner, `bearer/page-number/items?date=${DATE}&page=5&per_page=10`);
    assert.deepEqual(page.body, { ...first.body, page: 5, total_pages: 6 });
    const offset = await get(partner, `bearer/offset/items?date=${DATE}&offset=5&limit=10`);
    assert.deepEqual(offset.body, { records: (first.body.data as unknown[]).slice(0, 10), total: 45 });
    partner.faults.add({ route: 'catalog', kind: 'loop', position: '40' });
    const end = await get(partner, `bearer/offset/items?date=${DATE}&offset=40&limit=10`);
    assert.deepEqual(end.body, { records: first.body.data, total: 51 });
  });

  void it('the read faults apply to catalog routes: status, reset, truncate, malformed, schema, delay, oversize', async () => {
    const url = `${partner.url}/catalog/api-key/link-header/items?date=${DATE}&per_page=5`;
    const call = () => fetch(url, { headers: { 'x-api-key': 'demo-catalog-token' } });
    const add = (spec: Omit<FaultSpec, 'route' | 'style'>) =>
      partner.faults.add({ route: 'catalog', style: 'link-header', ...spec });
    add({ kind: 'status', status: 503, retryAfter: '3' });
    const unavailable = await call();
    assert.deepEqual([unavailable.status, unavailable.headers.get('retry-after')], [503, '3']);
    add({ kind: 'reset' });
    await assert.rejects(call());
    add({ kind: 'truncate' });
    await assert.rejects(call().then((r) => r.text()));
    add({ kind: 'malformed' });
    await assert.rejects((await call()).json(), SyntaxError);
    add({ kind: 'schema' });
    assert.equal(Array.isArray(await (await call()).json()), false, 'not the array this style serves');
    add({ kind: 'delay', delayMs: 60_000 });
    await assert.rejects(
      fetch(url, { headers: { 'x-api-key': 'demo-catalog-token' }, signal: AbortSignal.timeout(100) }),
    );
    await waitFor(() => partner.ledger.count({ status: 499 }) === 1, 'the 499 entry');
    add({ kind: 'oversize', bytes: 100_000 });
    const huge = await call();
    assert.match(huge.headers.get('link') ?? '', /rel="next"/, 'the page keeps its Link header');
    const text = await huge.text();
    assert.equal(Buffer.byteLength(text), 100_000);
    const padded = JSON.parse(text) as (PartnerRecord & { padding: string })[];
    assert.equal(padded.length, 5, 'still a bare array of the page');
    assert.ok(padded.every((r) => r.padding.length > 0));
    assert.deepEqual(
      partner.ledger.entries().map((e) => [e.fault, e.credential]),
      ['status', 'reset', 'truncate', 'malformed', 'schema', 'client_closed', 'oversize'].map((f) => [
        f,
        'api_key_header',
      ]),
    );
  });

  void it('refuses catalog fault specs that cannot apply, saying why', () => {
    const refused: [object, RegExp][] = [
      [{ route: 'catalog', kind: 'off_origin' }, /needs route "catalog" and a "url"/],
      [{ route: 'rates', kind: 'off_origin', url: other.url }, /needs route "catalog"/],
      [{ route: 'catalog', kind: 'off_origin', url: `${other.url}/v1` }, /"url" must be an http\(s\) origin/],
      [
        { route: 'catalog', kind: 'off_origin', url: other.url, style: 'cursor' },
        /only styles "next-url" and "link-header"/,
      ],
      [{ route: 'catalog', kind: 'reset', url: other.url }, /"url" is only valid with kind "off_origin"/],
      [{ route: 'catalog', kind: 'loop', style: 'none' }, /cannot change style "none"/],
      [{ kind: 'loop' }, /kind "loop" needs route "rates" or "catalog"/],
      [{ route: 'catalog', kind: 'empty_page' }, /need route "rates"/],
      [{ route: 'rates', kind: 'reset', style: 'cursor' }, /"style" and "position" need route "catalog"/],
      [{ route: 'catalog', kind: 'reset', style: 'none', position: '2' }, /style "none" has no pages/],
      [{ route: 'catalog', kind: 'reset', cursor: null }, /match records requests only/],
      [
        { route: 'catalog', kind: 'reset', rateLimitReset: 5 },
        /only valid with kind "status" on the read routes/,
      ],
      [{ route: 'events', kind: 'status', status: 429, rateLimitReset: 5 }, /only valid with kind "status"/],
      [{ route: 'catalog', kind: 'status', status: 429, rateLimitReset: -1 }, /rateLimitReset/],
      [
        { route: 'catalog', kind: 'status', status: 429, rateLimitResetStyle: 'seconds' },
        /needs a "rateLimitReset"/,
      ],
      [{ route: 'catalog', kind: 'status', status: 429, style: 'graphql' }, /style/],
    ];
    for (const [spec, message] of refused) {
      assert.throws(
        () => partner.faults.add(spec as FaultSpec),
        { name: 'InvalidFaultSpecError', message },
        JSON.stringify(spec),
      );
    }
    assert.equal(partner.faults.list().length, 0);
  });
});
