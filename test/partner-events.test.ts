import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { AppliedEvent, PartnerEvent } from '../partner/events.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';

const SECRET_PAYLOAD = 'payload-marker-never-in-ledger';

function makeEvent(id: string, aggregateId = 'run-a', topic = 'fetch.page_stored'): PartnerEvent {
  return {
    id,
    topic,
    aggregateType: 'fetch_run',
    aggregateId,
    payload: { page: 1, records: 50, note: SECRET_PAYLOAD },
    createdAt: '2024-03-01T10:00:00.000Z',
  };
}

interface Delivery {
  status: number;
  body: { id?: string; duplicate?: boolean; error?: string; message?: string };
  headers: Headers;
}

async function post(
  base: string,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Delivery> {
  const res = await fetch(`${base}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
  return { status: res.status, body: (await res.json()) as Delivery['body'], headers: res.headers };
}

/** Delivers `event` the way an outbox publisher does: its id as the Idempotency-Key. */
function deliver(base: string, event: PartnerEvent, signal?: AbortSignal): Promise<Delivery> {
  return post(base, event, { 'Idempotency-Key': event.id }, signal);
}

const ids = (events: AppliedEvent[]) => events.map((e) => e.id);

void describe('partner: events', () => {
  let partner: PartnerServer;
  let records: string;
  before(async () => {
    partner = await startPartner({ port: 0, recordCount: () => 30 });
    records = `${partner.url}/sources/acme/records?date=2024-03-01`;
  });
  beforeEach(() => {
    partner.faults.clear();
    partner.ledger.clear();
    partner.events.clear();
  });
  after(() => partner.close());

  void it('applies the first delivery of an id and answers later ones as duplicates', async () => {
    const event = makeEvent('e-1');
    const first = await deliver(partner.url, event);
    assert.equal(first.status, 200);
    assert.deepEqual(first.body, { id: 'e-1', duplicate: false });
    const second = await deliver(partner.url, event);
    assert.equal(second.status, 200);
    assert.deepEqual(second.body, { id: 'e-1', duplicate: true });

    const applied = partner.events.list();
    assert.equal(applied.length, 1);
    const [stored] = applied;
    assert.deepEqual(
      { ...stored, appliedSeq: 0, appliedAt: '' },
      {
        ...event,
        appliedSeq: 0,
        appliedAt: '',
        deliveries: 2,
      },
    );
    assert.ok((stored?.appliedSeq ?? 0) >= 1);
    assert.ok(!Number.isNaN(Date.parse(stored?.appliedAt ?? '')));
    assert.equal(partner.events.deliveries(), 2);
    assert.equal(partner.events.duplicates(), 1);

    // list() hands out copies.
    (stored?.payload as { page: number }).page = 99;
    assert.deepEqual(partner.events.list()[0]?.payload, event.payload);
  });

  void it('assigns increasing appliedSeq in applied order', async () => {
    for (const id of ['e-3', 'e-1', 'e-2', 'e-1']) await deliver(partner.url, makeEvent(id));
    const applied = partner.events.list();
    assert.deepEqual(ids(applied), ['e-3', 'e-1', 'e-2']);
    const seqs = applied.map((e) => e.appliedSeq);
    assert.deepEqual(
      seqs,
      [...seqs].sort((a, b) => a - b),
    );
    assert.equal(new Set(seqs).size, 3);
  });

  void it('answers 400 without a valid Idempotency-Key, on a key mismatch and on a bad body; 405 otherwise', async () => {
    const event = makeEvent('e-1');
    const noKey = await post(partner.url, event);
    assert.equal(noKey.status, 400);
    assert.equal(noKey.body.error, 'missing_idempotency_key');
    const tooLong = await post(
      partner.url,
      { ...event, id: 'x'.repeat(201) },
      { 'Idempotency-Key': 'x'.repeat(201) },
    );
    assert.equal(tooLong.body.error, 'missing_idempotency_key');

    const mismatch = await post(partner.url, event, { 'Idempotency-Key': 'e-2' });
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.body.error, 'key_mismatch');

    const { payload: _payload, ...withoutPayload } = event;
    for (const body of [
      {},
      withoutPayload,
      { ...event, topic: '' },
      { ...event, aggregateId: 42 },
      { ...event, createdAt: 'yesterday' },
      [event],
    ]) {
      const res = await post(partner.url, body, { 'Idempotency-Key': 'e-1' });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error, 'invalid_event');
      assert.ok((res.body.message ?? '').length > 0);
    }
    const badJson = await post(partner.url, '{"id":', { 'Idempotency-Key': 'e-1' });
    assert.equal(badJson.body.error, 'invalid_json');

    const get = await fetch(`${partner.url}/events`);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');

    assert.equal(partner.events.list().length, 0);
    assert.equal(partner.events.deliveries(), 0);
    assert.equal(
      partner.ledger.count({ path: '/events', status: 400 }),
      10,
      'rejected deliveries are recorded',
    );
    assert.equal(partner.ledger.count({ path: '/events', status: 405 }), 1);
  });

  void it('status fault on one aggregate: other aggregates apply, the faulted event does not', async () => {
    partner.faults.add({
      route: 'events',
      kind: 'status',
      status: 503,
      retryAfter: '1',
      aggregateId: 'run-a',
      times: 5,
    });
    assert.equal((await deliver(partner.url, makeEvent('b-1', 'run-b'))).status, 200);
    const faulted = await deliver(partner.url, makeEvent('a-1', 'run-a'));
    assert.equal(faulted.status, 503);
    assert.equal(faulted.headers.get('retry-after'), '1');
    assert.equal(faulted.body.error, 'injected_fault');
    assert.equal((await deliver(partner.url, makeEvent('b-2', 'run-b'))).status, 200);

    assert.deepEqual(ids(partner.events.list()), ['b-1', 'b-2']);
    const [fault] = partner.faults.list();
    assert.equal(fault?.seen, 1, 'other aggregates are not counted');
    assert.equal(fault?.remaining, 4, 'other aggregates do not consume it');

    partner.faults.clear();
    assert.deepEqual((await deliver(partner.url, makeEvent('a-1', 'run-a'))).body, {
      id: 'a-1',
      duplicate: false,
    });
    const [applied] = partner.events.list({ aggregateId: 'run-a' });
    assert.equal(applied?.deliveries, 2, 'the faulted delivery counts for the id');
    assert.equal(
      partner.events.deliveries(),
      3,
      'faulted deliveries that were not applied are not in the total',
    );
    assert.equal(partner.events.duplicates(), 0);
  });

  void it('reset fault on one event id: destroys the socket without applying', async () => {
    partner.faults.add({ route: 'events', kind: 'reset', eventId: 'e-2' });
    assert.equal((await deliver(partner.url, makeEvent('e-1'))).status, 200);
    assert.equal(partner.faults.list()[0]?.seen, 0, 'other event ids are not counted');
    await assert.rejects(deliver(partner.url, makeEvent('e-2')));
    assert.deepEqual(ids(partner.events.list()), ['e-1']);
    assert.equal(partner.faults.list().length, 0);

    assert.equal((await deliver(partner.url, makeEvent('e-2'))).body.duplicate, false);
    assert.deepEqual(
      partner.ledger
        .entries({ path: '/events' })
        .map((e) => [e.idempotencyKey, e.status, e.fault, e.duplicate]),
      [
        ['e-1', 200, undefined, false],
        ['e-2', 0, 'reset', undefined],
        ['e-2', 200, undefined, false],
      ],
    );
  });

  void it('delay fault: applies after the delay, also when the publisher times out first', async () => {
    partner.faults.add({ route: 'events', kind: 'delay', delayMs: 150 });
    const started = Date.now();
    const delayed = await deliver(partner.url, makeEvent('e-1'));
    assert.ok(Date.now() - started >= 140, `answered after ${Date.now() - started} ms`);
    assert.deepEqual(delayed.body, { id: 'e-1', duplicate: false });
    assert.equal(partner.ledger.count({ fault: 'delay', status: 200 }), 1);

    partner.faults.add({ route: 'events', kind: 'delay', delayMs: 300 });
    await assert.rejects(deliver(partner.url, makeEvent('e-2'), AbortSignal.timeout(50)), {
      name: 'TimeoutError',
    });
    assert.deepEqual(ids(partner.events.list()), ['e-1'], 'not applied before the delay is over');
    await new Promise((r) => setTimeout(r, 400));
    assert.deepEqual(ids(partner.events.list()), ['e-1', 'e-2']);
    assert.equal(partner.ledger.count({ fault: 'client_closed', status: 499 }), 1);
    assert.deepEqual((await deliver(partner.url, makeEvent('e-2'))).body, { id: 'e-2', duplicate: true });
  });

  void it('events faults leave the records route alone and records faults leave events alone', async () => {
    partner.faults.add({ route: 'events', kind: 'status', status: 500, times: 5 });
    assert.equal((await fetch(records)).status, 200);
    assert.equal(partner.faults.list()[0]?.seen, 0);
    assert.equal((await deliver(partner.url, makeEvent('e-1'))).status, 500);
    partner.faults.clear();

    partner.faults.add({ kind: 'status', status: 500, times: 5 });
    partner.faults.add({ route: 'records', kind: 'reset', sourceId: 'acme', times: 5 });
    assert.equal((await deliver(partner.url, makeEvent('e-1'))).status, 200);
    assert.deepEqual(
      partner.faults.list().map((f) => [f.seen, f.remaining]),
      [
        [0, 5],
        [0, 5],
      ],
    );
    assert.equal((await fetch(records)).status, 500);
  });

  void it('refuses event faults of other kinds and matchers of the other route', async () => {
    for (const spec of [
      { route: 'events', kind: 'truncate' },
      { route: 'events', kind: 'malformed' },
      { route: 'events', kind: 'schema' },
      { route: 'events', kind: 'status', status: 503, sourceId: 'acme' },
      { route: 'events', kind: 'reset', cursor: null },
      { kind: 'reset', aggregateId: 'run-a' },
      { route: 'records', kind: 'reset', eventId: 'e-1' },
      { route: 'webhooks', kind: 'reset' },
    ]) {
      const res = await fetch(`${partner.url}/_admin/faults`, { method: 'POST', body: JSON.stringify(spec) });
      assert.equal(res.status, 400, JSON.stringify(spec));
      assert.equal(((await res.json()) as { error: string }).error, 'invalid_fault');
    }
    const created = await fetch(`${partner.url}/_admin/faults`, {
      method: 'POST',
      body: JSON.stringify({
        route: 'events',
        kind: 'delay',
        delayMs: 10,
        eventId: 'e-1',
        aggregateId: 'run-a',
      }),
    });
    assert.equal(created.status, 201);
    assert.equal(partner.faults.list().length, 1);
  });

  void it('admin API: lists applied events with filters and counts, and clears them', async () => {
    await deliver(partner.url, makeEvent('e-1', 'run-a', 'fetch.page_stored'));
    await deliver(partner.url, makeEvent('e-2', 'run-a', 'fetch.run_completed'));
    await deliver(partner.url, makeEvent('e-3', 'run-b', 'fetch.page_stored'));
    await deliver(partner.url, makeEvent('e-1', 'run-a', 'fetch.page_stored'));

    type Listing = { events: AppliedEvent[]; deliveries: number; duplicates: number };
    const list = async (query = '') =>
      (await (await fetch(`${partner.url}/_admin/events${query}`)).json()) as Listing;
    const all = await list();
    assert.deepEqual(ids(all.events), ['e-1', 'e-2', 'e-3']);
    assert.deepEqual([all.deliveries, all.duplicates], [4, 1]);
    assert.deepEqual(all.events[0]?.payload, makeEvent('e-1').payload);

    const runA = await list('?aggregateId=run-a');
    assert.deepEqual(ids(runA.events), ['e-1', 'e-2']);
    assert.deepEqual([runA.deliveries, runA.duplicates], [3, 1]);
    const pages = await list('?topic=fetch.page_stored');
    assert.deepEqual(ids(pages.events), ['e-1', 'e-3']);
    assert.deepEqual(ids((await list('?aggregateId=run-b&topic=fetch.run_completed')).events), []);

    const cleared = await fetch(`${partner.url}/_admin/events`, { method: 'DELETE' });
    assert.deepEqual(await cleared.json(), { cleared: 3 });
    assert.deepEqual(await list(), { events: [], deliveries: 0, duplicates: 0 });
    assert.equal((await fetch(`${partner.url}/_admin/events`, { method: 'POST' })).status, 405);
    assert.equal(partner.ledger.count({ path: '/_admin/events' }), 0, 'admin requests are not recorded');

    assert.equal(
      (await deliver(partner.url, makeEvent('e-1'))).body.duplicate,
      false,
      'cleared ids apply again',
    );
  });
});

void describe('partner: events in the ledger', () => {
  void it('records topic, aggregateId and duplicate per delivery, never the payload', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'partner-events-'));
    const ledgerFile = join(dir, 'ledger.jsonl');
    const partner = await startPartner({ port: 0, ledgerFile });
    try {
      const event = makeEvent('e-1', 'run-a', 'fetch.run_completed');
      await post(partner.url, event, { 'Idempotency-Key': 'e-1', Authorization: 'Bearer s3cret' });
      await deliver(partner.url, event);
      partner.faults.add({ route: 'events', kind: 'status', status: 429 });
      await deliver(partner.url, event);

      const entries = partner.ledger.entries({ path: '/events' });
      assert.deepEqual(
        entries.map((e) => [e.method, e.status, e.topic, e.aggregateId, e.duplicate, e.fault, e.auth]),
        [
          ['POST', 200, 'fetch.run_completed', 'run-a', false, undefined, true],
          ['POST', 200, 'fetch.run_completed', 'run-a', true, undefined, false],
          ['POST', 429, 'fetch.run_completed', 'run-a', undefined, 'status', false],
        ],
      );
      assert.ok(entries.every((e) => e.idempotencyKey === 'e-1' && !('payload' in e)));
      assert.equal(partner.ledger.count({ aggregateId: 'run-a', topic: 'fetch.run_completed' }), 3);
      assert.equal(partner.events.list()[0]?.deliveries, 3);

      const admin = await (await fetch(`${partner.url}/_admin/ledger?path=/events&aggregateId=run-a`)).text();
      assert.equal((JSON.parse(admin) as { entries: unknown[] }).entries.length, 3);
      const file = readFileSync(ledgerFile, 'utf8');
      assert.equal(file.trimEnd().split('\n').length, 3);
      for (const text of [admin, file, JSON.stringify(partner.ledger.entries())]) {
        assert.ok(!text.includes(SECRET_PAYLOAD), 'payload is never recorded');
        assert.ok(!text.includes('s3cret'));
      }
    } finally {
      await partner.close();
    }
  });
});

// A broken close() hangs rather than failing: the timeout turns that into a failure.
void describe('partner: events and close', { timeout: 5000 }, () => {
  void it('cancels a delayed delivery without applying or recording it', async () => {
    const partner = await startPartner({ port: 0 });
    partner.faults.add({ route: 'events', kind: 'delay', delayMs: 200 });
    const pending = deliver(partner.url, makeEvent('e-1'));
    while (partner.faults.list().length > 0) await new Promise((r) => setTimeout(r, 5));
    const started = Date.now();
    await partner.close();
    assert.ok(Date.now() - started < 1000, `close took ${Date.now() - started} ms`);
    await assert.rejects(pending);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(partner.events.list().length, 0);
    assert.equal(partner.ledger.count(), 0);
  });
});
