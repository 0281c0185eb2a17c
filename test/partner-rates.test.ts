import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { Rate, RatesPage } from '../partner/rates.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';
import { waitFor } from './helpers/outbox.ts';

const DATE = '2026-11-20';
const AUTH = { authorization: 'Bearer test-token' };
const EIGHT = ['EUR', 'USD', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD', 'SEK'];

interface Reply {
  status: number;
  text: string;
  headers: Headers;
}

async function get(base: string, query: string, headers: Record<string, string> = AUTH): Promise<Reply> {
  const res = await fetch(`${base}/rates?${query}`, { headers });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

async function page(base: string, query: string): Promise<RatesPage> {
  const reply = await get(base, query);
  assert.equal(reply.status, 200, reply.text);
  return JSON.parse(reply.text) as RatesPage;
}

/** Follows `starting_after` to the end, as a Stripe client does; returns every item and the page count. */
async function walk(base: string, date: string, limit?: number): Promise<{ items: Rate[]; pages: number }> {
  const items: Rate[] = [];
  let pages = 0;
  for (let more = true; more; pages++) {
    const last = items.at(-1);
    const query = `date=${date}${limit ? `&limit=${limit}` : ''}${last ? `&starting_after=${last.id}` : ''}`;
    const list = await page(base, query);
    assert.ok(pages < 100, 'the walk ends');
    items.push(...list.data);
    more = list.has_more;
  }
  return { items, pages };
}

void describe('partner: rates', () => {
  let partner: PartnerServer;
  before(async () => {
    partner = await startPartner({ port: 0 });
  });
  beforeEach(() => {
    partner.faults.clear();
    partner.ledger.clear();
  });
  after(() => partner.close());

  void it('pagination walks all 56 pairs exactly once, whatever the limit, one request per page', async () => {
    for (const limit of [1, 7, 10, undefined, 55, 56, 100]) {
      partner.ledger.clear();
      const { items, pages } = await walk(partner.url, DATE, limit);
      const ids = items.map((r) => r.id);
      assert.equal(ids.length, 56, `limit ${limit}`);
      assert.equal(new Set(ids).size, 56, `limit ${limit}: no pair twice`);
      assert.equal(pages, Math.ceil(56 / (limit ?? 10)), `limit ${limit}`);
      assert.equal(
        partner.ledger.count({ path: '/rates', status: 200 }),
        pages,
        'every call is in the ledger',
      );
      assert.equal(ids[0], 'EURUSD');
    }
    const { items } = await walk(partner.url, DATE);
    for (const rate of items) {
      assert.ok(EIGHT.includes(rate.base) && EIGHT.includes(rate.quote) && rate.base !== rate.quote);
      assert.equal(rate.id, `${rate.base}${rate.quote}`);
      assert.equal(rate.date, DATE);
      assert.match(rate.rate, /^\d+\.\d{6}$/);
      assert.ok(Number(rate.rate) > 0);
    }
    const first = await page(partner.url, `date=${DATE}&limit=2`);
    assert.deepEqual(Object.keys(first).sort(), ['data', 'has_more', 'object']);
    assert.equal(first.object, 'list');
    assert.deepEqual(Object.keys(first.data[0] ?? {}).sort(), ['base', 'date', 'id', 'quote', 'rate']);
  });

  void it('is deterministic per date: same bytes across calls and servers; another date, same pairs, other rates', async () => {
    const query = `date=${DATE}&limit=100`;
    const one = await get(partner.url, query);
    const other = await startPartner({ port: 0 });
    try {
      assert.equal((await get(other.url, query)).text, one.text, 'a fresh partner serves the same body');
    } finally {
      await other.close();
    }
    assert.equal((await get(partner.url, query)).text, one.text);
    const today = (JSON.parse(one.text) as RatesPage).data;
    const tomorrow = (await page(partner.url, 'date=2026-11-21&limit=100')).data;
    assert.deepEqual(
      tomorrow.map((r) => r.id),
      today.map((r) => r.id),
    );
    assert.notDeepEqual(
      tomorrow.map((r) => r.rate),
      today.map((r) => r.rate),
    );
    const eurUsd = today.find((r) => r.id === 'EURUSD');
    const usdEur = today.find((r) => r.id === 'USDEUR');
    // Both sides of a pair come from the same two values, so they are reciprocal up to rounding.
    assert.ok(Math.abs(Number(eurUsd?.rate) * Number(usdEur?.rate) - 1) < 1e-5);
  });

  void it('the pair count is a server option; n·(n−1) pairs are those of the first n currencies', async () => {
    const small = await startPartner({ port: 0, ratePairCount: (date) => (date === '2026-01-01' ? 0 : 6) });
    try {
      const { items } = await walk(small.url, DATE, 4);
      assert.deepEqual(items.map((r) => r.id).sort(), [
        'EURGBP',
        'EURUSD',
        'GBPEUR',
        'GBPUSD',
        'USDEUR',
        'USDGBP',
      ]);
      assert.deepEqual(await page(small.url, 'date=2026-01-01'), {
        object: 'list',
        data: [],
        has_more: false,
      });
      const beyond = await get(small.url, `date=${DATE}&starting_after=EURJPY`);
      assert.equal(beyond.status, 400, 'a pair beyond the count is unknown');
    } finally {
      await small.close();
    }
  });

  void it('refuses requests without a bearer token (401, recorded, no fault consumed); checks the configured token', async () => {
    partner.faults.add({ route: 'rates', kind: 'status', status: 503 });
    const refused: Record<string, string>[] = [
      {},
      { authorization: 'Basic dXNlcjpwdw==' },
      { authorization: 'Bearer ' },
    ];
    for (const headers of refused) {
      const reply = await get(partner.url, `date=${DATE}`, headers);
      assert.equal(reply.status, 401);
      assert.equal((JSON.parse(reply.text) as { error: string }).error, 'unauthorized');
      assert.equal(reply.headers.get('www-authenticate'), 'Bearer');
    }
    assert.equal(partner.ledger.count({ path: '/rates', status: 401 }), 3);
    assert.equal(partner.faults.list().length, 1, 'the fault waits for an authorised request');
    assert.equal((await get(partner.url, `date=${DATE}`)).status, 503);

    const guarded = await startPartner({ port: 0, ratesToken: 's3cret' });
    try {
      assert.equal((await get(guarded.url, `date=${DATE}`)).status, 401, 'another token');
      assert.equal((await get(guarded.url, `date=${DATE}`, { authorization: 'Bearer s3cret' })).status, 200);
      assert.deepEqual(
        guarded.ledger.entries().map((e) => [e.status, e.auth]),
        [
          [401, true],
          [200, true],
        ],
      );
    } finally {
      await guarded.close();
    }
    await assert.rejects(startPartner({ port: 0, ratesToken: '' }), /ratesToken/);
  });

  void it('answers bad requests with 400 JSON errors, as Stripe does', async () => {
    const cases: [string, string][] = [
      [`date=${DATE}&limit=101`, 'invalid_limit'],
      [`date=${DATE}&limit=0`, 'invalid_limit'],
      [`date=${DATE}&limit=ten`, 'invalid_limit'],
      [`date=${DATE}&starting_after=EURXYZ`, 'invalid_starting_after'],
      [`date=${DATE}&starting_after=`, 'invalid_starting_after'],
      ['limit=5', 'invalid_date'],
      ['date=2026-02-30', 'invalid_date'],
    ];
    for (const [query, error] of cases) {
      const reply = await get(partner.url, query);
      assert.equal(reply.status, 400, query);
      assert.equal((JSON.parse(reply.text) as { error: string }).error, error, query);
    }
    assert.equal((await page(partner.url, `date=${DATE}&limit=100`)).data.length, 56, 'limit 100 is allowed');
    const post = await fetch(`${partner.url}/rates?date=${DATE}`, { method: 'POST', headers: AUTH });
    assert.equal(post.status, 405);
    assert.equal(partner.ledger.count({ path: '/rates', status: 400 }), cases.length);
  });

  void it('faults of route "rates" hit only rates requests and match date and startingAfter', async () => {
    await fetch(`${partner.url}/_admin/faults`, {
      method: 'POST',
      body: JSON.stringify({ route: 'rates', date: DATE, startingAfter: null, kind: 'status', status: 502 }),
    });
    assert.equal((await get(partner.url, `date=2026-11-21`)).status, 200, 'another date');
    assert.equal(
      (await get(partner.url, `date=${DATE}&starting_after=EURUSD`)).status,
      200,
      'not a first page',
    );
    const records = await fetch(`${partner.url}/sources/demo/records?date=${DATE}`);
    assert.equal(records.status, 200, 'the records route is not hit');
    assert.equal((await get(partner.url, `date=${DATE}`)).status, 502);
    assert.equal(partner.faults.list().length, 0);
    assert.deepEqual(
      partner.ledger.entries({ fault: 'status' }).map((e) => [e.path, e.date, e.startingAfter]),
      [['/rates', DATE, null]],
    );
  });

  void it('5xx and 429 with Retry-After, with the error body the fault says', async () => {
    partner.faults.add({ route: 'rates', kind: 'status', status: 429, retryAfter: '7', body: 'slow down' });
    partner.faults.add({ route: 'rates', kind: 'status', status: 500, afterRequests: 1 });
    const limited = await get(partner.url, `date=${DATE}`);
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '7');
    assert.deepEqual(JSON.parse(limited.text), { error: 'injected_fault', message: 'slow down' });
    assert.equal((await get(partner.url, `date=${DATE}`)).status, 500);
    assert.equal((await get(partner.url, `date=${DATE}`)).status, 200);
    assert.deepEqual(
      partner.ledger.entries({ path: '/rates' }).map((e) => [e.status, e.fault]),
      [
        [429, 'status'],
        [500, 'status'],
        [200, undefined],
      ],
    );
  });

  void it('reset, truncate, malformed and schema break the answer in their own ways', async () => {
    partner.faults.add({ route: 'rates', kind: 'reset' });
    await assert.rejects(get(partner.url, `date=${DATE}`));
    partner.faults.add({ route: 'rates', kind: 'truncate' });
    await assert.rejects(get(partner.url, `date=${DATE}`), 'half a body, then the socket dies');
    partner.faults.add({ route: 'rates', kind: 'malformed' });
    const malformed = await get(partner.url, `date=${DATE}`);
    assert.equal(malformed.status, 200);
    assert.throws(() => JSON.parse(malformed.text) as unknown, SyntaxError);
    partner.faults.add({ route: 'rates', kind: 'schema' });
    const schema = JSON.parse((await get(partner.url, `date=${DATE}`)).text) as Record<string, unknown>;
    assert.equal(schema.data, undefined, 'no "data" array');
    assert.deepEqual(
      partner.ledger.entries({ path: '/rates' }).map((e) => [e.status, e.fault]),
      [
        [0, 'reset'],
        [0, 'truncate'],
        [200, 'malformed'],
        [200, 'schema'],
      ],
    );
  });

  void it('delay: a patient client gets the page; one that gives up is recorded as 499 client_closed', async () => {
    partner.faults.add({ route: 'rates', kind: 'delay', delayMs: 50 });
    assert.equal((await page(partner.url, `date=${DATE}&limit=3`)).data.length, 3);
    partner.faults.add({ route: 'rates', kind: 'delay', delayMs: 60_000 });
    await assert.rejects(
      fetch(`${partner.url}/rates?date=${DATE}`, { headers: AUTH, signal: AbortSignal.timeout(100) }),
      { name: 'TimeoutError' },
    );
    await waitFor(() => partner.ledger.count({ status: 499 }) === 1, 'the 499 entry');
    assert.deepEqual(
      partner.ledger.entries({ path: '/rates' }).map((e) => [e.status, e.fault]),
      [
        [200, 'delay'],
        [499, 'client_closed'],
      ],
    );
  });

  void it('oversize: the normal page, valid JSON, padded to the bytes asked for and streamed', async () => {
    partner.faults.add({ route: 'rates', kind: 'oversize', bytes: 300_000 });
    const reply = await get(partner.url, `date=${DATE}&limit=4`);
    assert.equal(reply.headers.get('content-length'), null, 'chunked unless contentLength is asked for');
    assert.equal(Buffer.byteLength(reply.text), 300_000);
    const padded = JSON.parse(reply.text) as { data: (Rate & { padding: string })[]; has_more: boolean };
    assert.deepEqual(
      padded.data.map((r) => r.id),
      (await page(partner.url, `date=${DATE}&limit=4`)).data.map((r) => r.id),
    );
    assert.ok(padded.data.every((r) => r.padding.length > 0));
    const [entry] = partner.ledger.entries({ fault: 'oversize' });
    assert.equal(entry?.bodyBytes, 300_000);
    assert.equal(entry?.bytesSent, 300_000);
  });

  void it('loop: has_more forever with the same last item again, so starting_after repeats while it lasts', async () => {
    partner.faults.add({ route: 'rates', kind: 'loop', times: 4 });
    const first = await page(partner.url, `date=${DATE}&limit=5`);
    assert.equal(first.data.length, 5);
    const last = first.data.at(-1)?.id ?? '';
    for (let i = 0; i < 3; i++) {
      const again = await page(partner.url, `date=${DATE}&limit=5&starting_after=${last}`);
      assert.equal(again.has_more, true);
      assert.equal(again.data.at(-1)?.id, last, 'the page ends with the item the client continued from');
      assert.deepEqual(again.data, first.data, 'the same page again');
    }
    const past = await page(partner.url, `date=${DATE}&limit=5&starting_after=${last}`);
    assert.notEqual(past.data[0]?.id, last, 'once the fault is spent the list moves on');
    assert.equal(partner.ledger.count({ path: '/rates', startingAfter: last, fault: 'loop' }), 3);
    assert.equal(partner.ledger.count({ path: '/rates', fault: 'loop' }), 4);
    // A loop on the last page still claims more.
    partner.faults.add({ route: 'rates', kind: 'loop' });
    const end = await page(partner.url, `date=${DATE}&limit=100`);
    assert.equal(end.data.length, 56);
    assert.equal(end.has_more, true);
  });

  void it('empty_page: has_more true with an empty data array', async () => {
    partner.faults.add({ route: 'rates', kind: 'empty_page', startingAfter: 'EURUSD' });
    assert.equal((await page(partner.url, `date=${DATE}&limit=1`)).data[0]?.id, 'EURUSD');
    assert.deepEqual(await page(partner.url, `date=${DATE}&limit=1&starting_after=EURUSD`), {
      object: 'list',
      data: [],
      has_more: true,
    });
    assert.deepEqual(
      partner.ledger.entries({ path: '/rates' }).map((e) => [e.startingAfter, e.fault]),
      [
        [null, undefined],
        ['EURUSD', 'empty_page'],
      ],
    );
  });

  void it('overfull: more items than limit asked for; continuing from the last one still covers each pair once', async () => {
    partner.faults.add({ route: 'rates', kind: 'overfull', extraItems: 3, times: 2 });
    const { items, pages } = await walk(partner.url, DATE, 5);
    assert.deepEqual(
      partner.ledger
        .entries({ path: '/rates' })
        .slice(0, 3)
        .map((e) => e.fault),
      ['overfull', 'overfull', undefined],
    );
    assert.equal(items.length, 56);
    assert.equal(new Set(items.map((r) => r.id)).size, 56);
    assert.equal(pages, 2 + Math.ceil((56 - 16) / 5), 'two pages of 8, then pages of 5');
    partner.faults.add({ route: 'rates', kind: 'overfull' });
    assert.equal((await page(partner.url, `date=${DATE}&limit=10`)).data.length, 11, 'default: one extra');
    partner.faults.add({ route: 'rates', kind: 'overfull', extraItems: 50 });
    const tail = await page(partner.url, `date=${DATE}&limit=10&starting_after=${items.at(-4)?.id}`);
    assert.deepEqual(
      tail,
      { object: 'list', data: items.slice(-3), has_more: false },
      'as far as the list goes',
    );
  });

  void it('refuses fault specs that do not fit the rates route', async () => {
    const refused: unknown[] = [
      { kind: 'loop' },
      { route: 'records', kind: 'empty_page' },
      { route: 'journal', kind: 'overfull' },
      { route: 'rates', kind: 'loop', extraItems: 2 },
      { route: 'rates', kind: 'overfull', extraItems: 0 },
      { route: 'rates', kind: 'status', status: 503, cursor: null },
      { route: 'rates', kind: 'status', status: 503, sourceId: 'demo' },
      { kind: 'status', status: 503, startingAfter: 'EURUSD' },
      { route: 'rates', kind: 'status', status: 503, reference: 'x' },
    ];
    for (const spec of refused) {
      const res = await fetch(`${partner.url}/_admin/faults`, { method: 'POST', body: JSON.stringify(spec) });
      assert.equal(res.status, 400, JSON.stringify(spec));
      assert.equal(((await res.json()) as { error: string }).error, 'invalid_fault');
    }
    assert.equal(partner.faults.list().length, 0);
  });
});
