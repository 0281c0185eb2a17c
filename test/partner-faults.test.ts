import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { FaultSpec } from '../partner/faults.ts';
import type { PartnerRecord, RecordsPage } from '../partner/records.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';
import { waitFor } from './helpers/outbox.ts';

void describe('partner: fault injection', () => {
  let partner: PartnerServer;
  let records: string;
  before(async () => {
    partner = await startPartner({ port: 0, recordCount: () => 120 });
    records = `${partner.url}/sources/acme/records?date=2024-03-01`;
  });
  beforeEach(() => {
    partner.faults.clear();
    partner.ledger.clear();
  });
  after(() => partner.close());

  void it('status: answers the injected status with Retry-After, then expires after `times`', async () => {
    partner.faults.add({ kind: 'status', status: 503, retryAfter: '2', times: 2 });
    for (let i = 0; i < 2; i++) {
      const res = await fetch(records);
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '2');
      await res.arrayBuffer();
    }
    assert.equal((await fetch(records)).status, 200);
    assert.equal(partner.ledger.count({ fault: 'status', status: 503 }), 2);
    assert.equal(partner.ledger.count({ status: 200 }), 1);
  });

  void it('status with body: the error body carries the given text as its message; only with kind status on records', async () => {
    const body = 'invalid request for token tok-0123456789-SECRET';
    partner.faults.add({ kind: 'status', status: 422, body, times: 1 });
    const faulted = await fetch(records);
    assert.equal(faulted.status, 422);
    assert.deepEqual(await faulted.json(), { error: 'injected_fault', message: body });
    // Without a body, the default message is kept.
    partner.faults.add({ kind: 'status', status: 500 });
    const plain = await fetch(records);
    assert.equal(plain.status, 500);
    assert.deepEqual(await plain.json(), { error: 'injected_fault', message: 'injected status 500' });
    assert.equal((await fetch(records)).status, 200);

    const invalid = [
      { kind: 'reset', body: 'x' },
      { kind: 'delay', delayMs: 10, body: 'x' },
      { kind: 'status', status: 500, body: 'x'.repeat(2001) },
      { route: 'events', kind: 'status', status: 500, body: 'x' },
      { route: 'submissions', kind: 'status', status: 500, body: 'x' },
    ] as const;
    for (const spec of invalid) {
      assert.throws(() => partner.faults.add(spec), { name: 'InvalidFaultSpecError' }, JSON.stringify(spec));
    }
    assert.throws(
      () => partner.faults.add({ kind: 'reset', body: 'x' }),
      /"body" is only valid with kind "status"/,
    );
    const res = await fetch(`${partner.url}/_admin/faults`, {
      method: 'POST',
      body: JSON.stringify({ kind: 'status', status: 400, body: 'x'.repeat(2000) }),
    });
    assert.equal(res.status, 201);
    assert.equal(partner.faults.list()[0]?.body?.length, 2000);
  });

  void it('reset: destroys the socket without a response, recorded with status 0', async () => {
    partner.faults.add({ kind: 'reset' });
    await assert.rejects(fetch(records));
    assert.equal((await fetch(records)).status, 200);
    assert.deepEqual(
      partner.ledger.entries().map((e) => [e.status, e.fault]),
      [
        [0, 'reset'],
        [200, undefined],
      ],
    );
  });

  void it('truncate: sends headers and half a body, then destroys the socket', async () => {
    partner.faults.add({ kind: 'truncate' });
    const res = await fetch(records);
    assert.equal(res.status, 200);
    await assert.rejects(res.text());
    assert.equal(partner.ledger.count({ fault: 'truncate', status: 0 }), 1);
    const ok = await fetch(records);
    assert.equal(((await ok.json()) as RecordsPage).records.length, 50);
  });

  void it('delay: a client timeout fires first, yet the partner serves and records the request', async () => {
    partner.faults.add({ kind: 'delay', delayMs: 300 });
    await assert.rejects(fetch(records, { signal: AbortSignal.timeout(50) }), { name: 'TimeoutError' });
    assert.equal(partner.ledger.count(), 0);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(partner.ledger.count({ fault: 'delay', status: 200 }), 1);

    partner.faults.add({ kind: 'delay', delayMs: 150 });
    const started = Date.now();
    const delayed = await (await fetch(records)).text();
    assert.ok(Date.now() - started >= 140);
    assert.equal(delayed, await (await fetch(records)).text(), 'delayed response is the normal one');
  });

  void it('oversize: a valid page padded to `bytes`, streamed; the ledger says the client read it all', async () => {
    partner.faults.add({ kind: 'oversize', bytes: 3_000_000 });
    const res = await fetch(records);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-length'), null, 'chunked: no size announced');
    const text = await res.text();
    assert.equal(Buffer.byteLength(text), 3_000_000);
    type Padded = Omit<RecordsPage, 'records'> & { records: (PartnerRecord & { padding: string })[] };
    const page = JSON.parse(text) as Padded;
    const normal = (await (await fetch(records)).json()) as RecordsPage;
    assert.deepEqual(
      page.records.map(({ padding: _padding, ...record }) => record),
      normal.records,
      'the normal records, each with a padding field',
    );
    assert.equal(page.nextCursor, normal.nextCursor);
    assert.ok(page.records.every((r) => r.padding.length > 50_000));
    const [entry] = partner.ledger.entries({ fault: 'oversize' });
    assert.deepEqual([entry?.status, entry?.bodyBytes, entry?.bytesSent], [200, 3_000_000, 3_000_000]);

    // Announced, and smaller than the page itself: the page with empty paddings.
    partner.faults.add({ kind: 'oversize', bytes: 1, contentLength: true });
    const small = await fetch(records);
    const smallText = await small.text();
    assert.equal(small.headers.get('content-length'), String(Buffer.byteLength(smallText)));
    assert.deepEqual(
      (JSON.parse(smallText) as { records: { padding: string }[] }).records.map((r) => r.padding),
      normal.records.map(() => ''),
    );
  });

  void it('oversize: a client that stops reading early shows in the ledger as bytesSent < bodyBytes', async () => {
    partner.faults.add({ kind: 'oversize', bytes: 50_000_000, contentLength: true });
    const res = await fetch(records);
    assert.equal(res.headers.get('content-length'), '50000000');
    const reader = res.body?.getReader();
    assert.ok(reader);
    assert.equal((await reader.read()).done, false);
    await reader.cancel();
    await waitFor(() => partner.ledger.count({ fault: 'oversize' }) > 0, 'the oversize entry');
    const [entry] = partner.ledger.entries({ fault: 'oversize' });
    assert.equal(entry?.bodyBytes, 50_000_000);
    assert.ok((entry?.bytesSent ?? Infinity) < 50_000_000, `sent ${entry?.bytesSent} bytes`);
    assert.equal((await fetch(records)).status, 200, 'the fault expired');
  });

  void it('oversize: needs `bytes` within 1..200 MB, records route only; bytes/contentLength need kind oversize', () => {
    const invalid: [object, RegExp][] = [
      [{ kind: 'oversize' }, /needs a "bytes"/],
      [{ kind: 'oversize', bytes: 0 }, /bytes/],
      [{ kind: 'oversize', bytes: 200_000_001 }, /bytes/],
      [{ kind: 'oversize', bytes: 1.5 }, /bytes/],
      [{ kind: 'reset', bytes: 10 }, /only valid with kind "oversize"/],
      [{ kind: 'delay', delayMs: 1, contentLength: true }, /only valid with kind "oversize"/],
      [{ route: 'events', kind: 'oversize', bytes: 10 }, /route "events" takes only kinds/],
      [{ route: 'submissions', kind: 'oversize', bytes: 10 }, /route "submissions" takes only kinds/],
    ];
    for (const [spec, message] of invalid) {
      assert.throws(() => partner.faults.add(spec as FaultSpec), message, JSON.stringify(spec));
    }
    assert.equal(partner.faults.list().length, 0);
    partner.faults.add({ kind: 'oversize', bytes: 200_000_000 });
    assert.equal(partner.faults.list()[0]?.bytes, 200_000_000);
  });

  void it('page: serves the given JSON body with 200 for the matching page only; read routes only, needs a page', async () => {
    const page = { records: [{ id: 'a\u0000b', n: '\u{1F600}' }, { nope: [[[1]]] }], nextCursor: 7 };
    partner.faults.add({ kind: 'page', sourceId: 'acme', cursor: null, page });
    const faulted = await fetch(records);
    assert.equal(faulted.status, 200);
    assert.deepEqual(await faulted.json(), page);
    // Used up: the next request gets the partner's own page.
    const normal = (await (await fetch(records)).json()) as RecordsPage;
    assert.equal(normal.records.length > 0, true);
    assert.equal(partner.ledger.count({ fault: 'page', status: 200 }), 1);
    assert.throws(() => partner.faults.add({ kind: 'page' }), /kind "page" needs a "page"/);
    assert.throws(
      () => partner.faults.add({ kind: 'status', status: 500, page: {} }),
      /kind "page" needs a "page".*only it takes one/s,
    );
    assert.throws(
      () => partner.faults.add({ route: 'events', kind: 'page', page: {} }),
      /only valid on the read routes|route "events" takes only/,
    );
    assert.throws(
      () => partner.faults.add({ kind: 'page', page: 'x'.repeat(1_000_001) }),
      /at most 1000000 bytes of JSON/,
    );
  });

  void it('cursor null: hits only the first page', async () => {
    const first = (await (await fetch(records)).json()) as RecordsPage;
    const second = `${records}&cursor=${first.nextCursor ?? ''}`;
    partner.faults.add({ kind: 'status', status: 500, cursor: null, times: 5 });
    assert.equal((await fetch(second)).status, 200);
    assert.equal((await fetch(records)).status, 500);
    assert.equal(partner.ledger.count({ cursor: first.nextCursor ?? '', status: 200 }), 1);
  });

  void it('afterRequests: lets the first n matching requests through', async () => {
    partner.faults.add({ kind: 'status', status: 429, afterRequests: 2, sourceId: 'acme' });
    const other = `${partner.url}/sources/other/records?date=2024-03-01`;
    const statuses: number[] = [];
    for (const url of [records, other, records, records, records]) statuses.push((await fetch(url)).status);
    assert.deepEqual(statuses, [200, 200, 200, 429, 200]);
  });

  void it('matches sourceId and date filters', async () => {
    partner.faults.add({ kind: 'status', status: 404, sourceId: 'acme', date: '2024-03-02', times: 3 });
    assert.equal((await fetch(records)).status, 200);
    assert.equal((await fetch(`${partner.url}/sources/other/records?date=2024-03-02`)).status, 200);
    assert.equal((await fetch(`${partner.url}/sources/acme/records?date=2024-03-02`)).status, 404);
  });

  void it('admin API: adds, lists and clears faults; rejects bad JSON and bad specs with 400', async () => {
    const post = (body: string) => fetch(`${partner.url}/_admin/faults`, { method: 'POST', body });
    const created = await post(JSON.stringify({ kind: 'status', status: 401, cursor: null }));
    assert.equal(created.status, 201);
    assert.match(((await created.json()) as { id: string }).id, /^f\d+$/);
    assert.equal(partner.faults.list().length, 1);

    const badJson = await post('{kind:');
    assert.equal(badJson.status, 400);
    assert.equal(((await badJson.json()) as { error: string }).error, 'invalid_json');
    for (const spec of [
      { kind: 'status' },
      { kind: 'explode' },
      { kind: 'delay' },
      { kind: 'reset', times: 0 },
    ]) {
      const res = await post(JSON.stringify(spec));
      assert.equal(res.status, 400, JSON.stringify(spec));
      const body = (await res.json()) as { error: string; message: string };
      assert.equal(body.error, 'invalid_fault');
      assert.ok(body.message.length > 0);
    }
    assert.throws(() => partner.faults.add({ kind: 'status', status: 200 }), {
      name: 'InvalidFaultSpecError',
    });

    assert.equal((await fetch(`${partner.url}/_admin/faults`, { method: 'DELETE' })).status, 200);
    assert.equal(partner.faults.list().length, 0);
    assert.equal(partner.ledger.count(), 0, 'admin requests are not recorded');
  });
});
