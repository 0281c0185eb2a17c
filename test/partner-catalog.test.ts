// The demo partner's catalog API over real HTTP: every pagination style walked to the end yields each
// id of the date exactly once, and each style's shape and parameters are as documented.
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { CATALOG_STYLES } from '../partner/catalog.ts';
import type { PartnerRecord } from '../partner/records.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';
import {
  adminIds,
  BEARER,
  catalogGet as get,
  parseLinks,
  useCatalogPartner,
  walkCatalog,
} from './helpers/catalog-client.ts';

const DATE = '2026-11-20';

void describe('partner: catalog', () => {
  const server = useCatalogPartner({ catalogRecordCount: (date) => (date === DATE ? 103 : 0) });
  let partner: PartnerServer;
  beforeEach(() => {
    partner = server();
  });

  void it('every style walked to the end yields each id of /_admin/catalog exactly once, one request per page', async () => {
    const ids = await adminIds(partner, DATE);
    assert.equal(ids.length, 103);
    assert.equal(ids[0], `catalog-${DATE}-00001`);
    for (const style of CATALOG_STYLES) {
      for (const size of [undefined, 7, 100]) {
        partner.ledger.clear();
        const walk = await walkCatalog(partner.url, style, { date: DATE, size });
        assert.ok(walk.ended, `${style} ${size}: the walk ends`);
        assert.deepEqual(walk.ids, ids, `${style} ${size}: every id once, in list order`);
        const pages = style === 'none' ? 1 : Math.ceil(103 / (size ?? 25));
        assert.equal(walk.steps.length, pages, `${style} ${size}`);
        assert.equal(partner.ledger.count({ style, status: 200 }), pages, 'every page is in the ledger');
      }
    }
    for (const style of CATALOG_STYLES) {
      const empty = await walkCatalog(partner.url, style, { date: '2026-11-21' });
      assert.deepEqual([empty.ids, empty.ended], [[], true], `${style}: an empty day`);
    }
  });

  void it('the default catalog is 150..400 records per date, the same on every partner', async () => {
    const plain = await startPartner({ port: 0 });
    const other = await startPartner({ port: 0 });
    try {
      const ids = await adminIds(plain, DATE);
      assert.ok(ids.length >= 150 && ids.length <= 400, `${ids.length} records`);
      assert.deepEqual(await adminIds(other, DATE), ids);
      const walk = await walkCatalog(plain.url, 'link-header', { date: DATE, size: 100 });
      assert.deepEqual(walk.ids, ids);
      assert.notDeepEqual(await adminIds(plain, '2026-11-22'), ids);
    } finally {
      await Promise.all([plain.close(), other.close()]);
    }
  });

  void it('each style answers in its own shape: next-url relative, Link absolute with rel="first" before rel="next"', async () => {
    const cursor = await get(partner, `bearer/cursor/items?date=${DATE}&limit=2`);
    assert.deepEqual(Object.keys(cursor.body), ['items', 'meta']);
    const [record] = cursor.body.items as PartnerRecord[];
    assert.deepEqual(Object.keys(record ?? {}).sort(), [
      'amount',
      'category',
      'currency',
      'date',
      'id',
      'seq',
      'updatedAt',
    ]);
    const nextUrl = await get(partner, `bearer/next-url/items?date=${DATE}&limit=2`);
    const next = (nextUrl.body.links as { next: string }).next;
    assert.match(next, /^\/catalog\/bearer\/next-url\/items\?date=2026-11-20&limit=2&page_token=[\w-]+$/);
    const wide = (await get(partner, `bearer/next-url/items?date=${DATE}&limit=100`)).body.links as {
      next: string;
    };
    const second = await get(partner, wide.next.replace('/catalog/', ''));
    assert.deepEqual(second.body.links, { next: null }, 'the last page links nothing');
    const linkFirst = await fetch(
      `${partner.url}/catalog/bearer/link-header/items?date=${DATE}&per_page=50`,
      {
        headers: BEARER,
      },
    );
    const header = linkFirst.headers.get('link') ?? '';
    assert.ok(header.indexOf('rel="first"') < header.indexOf('rel="next"'), header);
    const links = parseLinks(header);
    assert.equal(links.first, `${partner.url}/catalog/bearer/link-header/items?date=${DATE}&per_page=50`);
    assert.match(
      links.next ?? '',
      /^http:\/\/127\.0\.0\.1:\d+\/catalog\/bearer\/link-header\/items\?date=.*&per_page=50&after=/,
    );
    assert.ok(Array.isArray(await linkFirst.json()), 'a bare array');
    const end = await fetch(links.next?.replace('per_page=50', 'per_page=100') ?? '', { headers: BEARER });
    assert.deepEqual(
      Object.keys(parseLinks(end.headers.get('link'))),
      ['first'],
      'no rel="next" on the last page',
    );
    const page = await get(partner, `bearer/page-number/items?date=${DATE}&page=9&per_page=20`);
    assert.deepEqual(page.body, { data: [], page: 9, per_page: 20, total_pages: 6 }, 'past the end: empty');
    const offset = await get(partner, `bearer/offset/items?date=${DATE}&offset=200`);
    assert.deepEqual(offset.body, { records: [], total: 103 });
    assert.equal(partner.ledger.entries({ style: 'page-number' })[0]?.position, '9');
  });

  void it('none: since/until (epoch seconds) keep the records updated in [since, until); malformed bounds are 400', async () => {
    const all = (await get(partner, `bearer/none/items?date=${DATE}`)).body.items as PartnerRecord[];
    const start = Date.parse(`${DATE}T06:00:00Z`) / 1000;
    const end = Date.parse(`${DATE}T12:00:00Z`) / 1000;
    const inWindow = all.filter(
      (r) => Date.parse(r.updatedAt) >= start * 1000 && Date.parse(r.updatedAt) < end * 1000,
    );
    assert.ok(inWindow.length > 0 && inWindow.length < all.length);
    const window = await get(partner, `bearer/none/items?date=${DATE}&since=${start}&until=${end}`);
    assert.deepEqual(window.body.items, inWindow);
    const dayAfter = `since=${end}&until=${end + 86_400 * 2}`;
    const beyond = (await get(partner, `bearer/none/items?date=${DATE}&${dayAfter}`)).body
      .items as PartnerRecord[];
    assert.equal(
      beyond.length + inWindow.length,
      all.filter((r) => Date.parse(r.updatedAt) >= start * 1000).length,
    );
    for (const [query, error] of [
      [`since=${start}`, 'invalid_range'],
      [`since=${end}&until=${start}`, 'invalid_range'],
      [`since=6am&until=${end}`, 'invalid_since'],
      [`since=${start}&until=${end}.5`, 'invalid_until'],
    ]) {
      const reply = await get(partner, `bearer/none/items?date=${DATE}&${query}`);
      assert.deepEqual([reply.status, reply.body.error], [400, error], query);
    }
  });
});
