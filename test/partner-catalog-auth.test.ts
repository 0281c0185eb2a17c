// The demo partner's catalog auth over real HTTP: each auth kind takes its own credential form, and
// wrong or missing ones are refused and recorded by form (never by value); bad requests answer 400.
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { type PartnerServer, startPartner } from '../partner/server.ts';
import {
  authorize,
  BEARER,
  CATALOG_TOKEN,
  catalogGet as get,
  type Credential,
  useCatalogPartner,
  walkCatalog,
} from './helpers/catalog-client.ts';

const DATE = '2026-11-20';

void describe('partner: catalog auth and bad requests', () => {
  const server = useCatalogPartner({ catalogRecordCount: (date) => (date === DATE ? 103 : 0) });
  let partner: PartnerServer;
  beforeEach(() => {
    partner = server();
  });

  void it('each auth kind takes its own credential; wrong or missing ones are refused (401) and recorded by form', async () => {
    const accepted: Credential[] = [
      { auth: 'bearer' },
      { auth: 'basic' },
      { auth: 'api-key', apiKeyIn: 'header' },
      { auth: 'api-key', apiKeyIn: 'query' },
    ];
    for (const credential of accepted) {
      const walk = await walkCatalog(partner.url, 'cursor', { date: DATE, size: 50, credential });
      assert.equal(walk.ids.length, 103, JSON.stringify(credential));
    }
    const forms = partner.ledger.entries().map((e) => [e.path, e.credential, e.authorized, e.status]);
    assert.deepEqual(forms.slice(0, 3), Array(3).fill(['/catalog/bearer/cursor/items', 'bearer', true, 200]));
    assert.deepEqual(forms[3], ['/catalog/basic/cursor/items', 'basic', true, 200]);
    assert.deepEqual(forms[6], ['/catalog/api-key/cursor/items', 'api_key_header', true, 200]);
    assert.deepEqual(forms[9], ['/catalog/api-key/cursor/items', 'api_key_query', true, 200]);
    partner.ledger.clear();
    partner.faults.add({ route: 'catalog', kind: 'status', status: 503 });
    const basicWrong = `Basic ${Buffer.from('demo:wrong').toString('base64')}`;
    const rootBasic = `Basic ${Buffer.from(`root:${CATALOG_TOKEN}`).toString('base64')}`;
    // [route auth kind, extra query, headers, the form recorded, the challenge sent]
    const refused: [string, string, Record<string, string>, string | undefined, string | null][] = [
      ['bearer', '', {}, undefined, 'Bearer'],
      ['bearer', '', { authorization: 'Bearer wrong' }, 'bearer', 'Bearer'],
      ['bearer', '', { 'x-api-key': CATALOG_TOKEN }, 'api_key_header', 'Bearer'],
      ['basic', '', BEARER, 'bearer', 'Basic realm="catalog"'],
      ['basic', '', { authorization: basicWrong }, 'basic', 'Basic realm="catalog"'],
      ['basic', '', { authorization: rootBasic }, 'basic', 'Basic realm="catalog"'],
      ['api-key', '', {}, undefined, null],
      ['api-key', '&api_key=', {}, 'api_key_query', null],
      // The header wins over the query: a wrong header is refused even beside a right query key.
      ['api-key', `&api_key=${CATALOG_TOKEN}`, { 'x-api-key': 'wrong' }, 'api_key_header', null],
    ];
    for (const [auth, query, headers, credential, challenge] of refused) {
      const reply = await get(partner, `${auth}/offset/items?date=${DATE}${query}`, headers);
      assert.deepEqual([reply.status, reply.body.error], [401, 'unauthorized'], JSON.stringify(headers));
      assert.equal(reply.headers.get('www-authenticate'), challenge);
      assert.equal(partner.ledger.entries().at(-1)?.credential, credential, JSON.stringify(headers));
    }
    assert.equal(partner.ledger.count({ status: 401, authorized: false }), refused.length);
    assert.ok(
      partner.ledger
        .entries()
        .every((e) => !e.path.includes('?') && !JSON.stringify(e).includes(CATALOG_TOKEN)),
    );
    assert.equal(partner.faults.list().length, 1, 'a refused request consumes no fault');

    const guarded = await startPartner({ port: 0, catalogToken: 's3cret', catalogRecordCount: () => 3 });
    try {
      const url = new URL(`${guarded.url}/catalog/basic/none/items?date=${DATE}`);
      assert.equal(
        (await fetch(url, { headers: BEARER })).status,
        401,
        'the default token no longer opens it',
      );
      const res = await fetch(url, { headers: authorize(url, { auth: 'basic', token: 's3cret' }) });
      assert.equal(((await res.json()) as { items: unknown[] }).items.length, 3);
    } finally {
      await guarded.close();
    }
    await assert.rejects(startPartner({ port: 0, catalogToken: 'two words' }), /catalogToken/);
  });

  void it('bad requests: 400 per parameter, 404 for an unknown auth kind or style, 405 for the other method', async () => {
    const cases: [string, string][] = [
      ['cursor/items?limit=5', 'invalid_date'],
      ['cursor/items?date=2026-02-30', 'invalid_date'],
      [`cursor/items?date=${DATE}&limit=0`, 'invalid_limit'],
      [`next-url/items?date=${DATE}&limit=101`, 'invalid_limit'],
      [`link-header/items?date=${DATE}&per_page=ten`, 'invalid_per_page'],
      [`cursor/items?date=${DATE}&cursor=nope`, 'invalid_cursor'],
      [`next-url/items?date=${DATE}&page_token=`, 'invalid_page_token'],
      [`link-header/items?date=${DATE}&after=djE6MQ`, 'invalid_after'],
      [`page-number/items?date=${DATE}&page=0`, 'invalid_page'],
      [`offset/items?date=${DATE}&offset=-1`, 'invalid_offset'],
    ];
    for (const [path, error] of cases) {
      const reply = await get(partner, `bearer/${path}`);
      assert.deepEqual([reply.status, reply.body.error], [400, error], path);
    }
    assert.equal(
      (await get(partner, `bearer/offset/items?date=${DATE}&limit=100`)).status,
      200,
      'limit 100 is allowed',
    );
    const search = (body: string) =>
      fetch(`${partner.url}/catalog/bearer/search`, { method: 'POST', headers: BEARER, body });
    const bodies: [string, string][] = [
      ['{"date": ', 'invalid_json'],
      ['[1]', 'invalid_body'],
      [`{"limit": 5}`, 'invalid_date'],
      [`{"date": "${DATE}", "limit": "5"}`, 'invalid_limit'],
      [`{"date": "${DATE}", "cursor": 7}`, 'invalid_cursor'],
      [`{"date": "${DATE}", "cursor": "x"}`, 'invalid_cursor'],
    ];
    for (const [body, error] of bodies) {
      const res = await search(body);
      assert.deepEqual([res.status, ((await res.json()) as { error: string }).error], [400, error], body);
    }
    assert.equal(
      partner.ledger.count({ style: 'search', status: 400 }),
      6,
      'each refused search is recorded',
    );
    for (const path of [
      'oauth/cursor/items',
      'bearer/graphql/items',
      'bearer/search/items',
      'bearer/cursor',
    ]) {
      assert.equal((await get(partner, `${path}?date=${DATE}`)).status, 404, path);
    }
    assert.equal((await get(partner, 'bearer/search')).status, 405);
    const post = await fetch(`${partner.url}/catalog/bearer/cursor/items?date=${DATE}`, {
      method: 'POST',
      headers: BEARER,
    });
    assert.deepEqual([post.status, post.headers.get('allow')], [405, 'GET']);
    assert.equal(partner.ledger.count({ style: 'search', status: 405 }), 1);
  });
});
