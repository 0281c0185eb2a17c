import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { JournalEffect, JournalEntry, JournalLine } from '../partner/journal.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';
import { waitFor } from './helpers/outbox.ts';

interface Reply {
  status: number;
  body: Partial<JournalEntry> & { data?: JournalEntry[]; error?: string; message?: string };
}

async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  init: { signal?: AbortSignal; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...init.headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    ...(init.signal ? { signal: init.signal } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Reply['body'] };
}

const LINES: JournalLine[] = [
  { account: 'fx-gain', amount: '-12.345678' },
  { account: 'cash', amount: '12.345678' },
];
const post = (base: string, reference: string, lines: unknown = LINES, signal?: AbortSignal) =>
  call(base, 'POST', '/journal-entries', { reference, lines }, signal ? { signal } : {});
const voidIt = (base: string, id: string) => call(base, 'POST', `/journal-entries/${id}/void`);
const lookup = (base: string, reference: string) =>
  call(base, 'GET', `/journal-entries?reference=${encodeURIComponent(reference)}`);

async function admin(
  base: string,
  reference?: string,
): Promise<{ entries: JournalEntry[]; effects: JournalEffect[] }> {
  const res = await fetch(`${base}/_admin/journal-entries${reference ? `?reference=${reference}` : ''}`);
  return (await res.json()) as { entries: JournalEntry[]; effects: JournalEffect[] };
}

void describe('partner: journal entries', () => {
  let partner: PartnerServer;
  /** Ledger entries of the journal routes as [action, status, effect, fault] tuples. */
  const trail = () =>
    partner.ledger
      .entries()
      .filter((e) => e.path.startsWith('/journal-entries'))
      .map((e) => [e.action, e.status, e.effect, e.fault]);
  before(async () => {
    partner = await startPartner({ port: 0 });
  });
  beforeEach(() => {
    partner.faults.clear();
    partner.ledger.clear();
    partner.journal.clear();
  });
  after(() => partner.close());

  void it('posting answers 201 with the new entry; repeat posts create duplicates, also under one Idempotency-Key', async () => {
    const first = await post(partner.url, 'fx-2026-11-20');
    assert.equal(first.status, 201);
    assert.deepEqual(Object.keys(first.body).sort(), ['id', 'lines', 'reference', 'status']);
    assert.match(first.body.id ?? '', /^je_\d+$/);
    assert.deepEqual(first.body, {
      id: first.body.id,
      reference: 'fx-2026-11-20',
      status: 'posted',
      lines: LINES,
    });
    const headers = { 'idempotency-key': 'same-key' };
    const body = { reference: 'fx-2026-11-20', lines: LINES };
    const second = await call(partner.url, 'POST', '/journal-entries', body, { headers });
    const third = await call(partner.url, 'POST', '/journal-entries', body, { headers });
    assert.deepEqual([second.status, third.status], [201, 201]);
    const ids = [first.body.id, second.body.id, third.body.id];
    assert.equal(new Set(ids).size, 3, 'every call is a new entry: the hostile baseline');
    const { effects, entries } = await admin(partner.url, 'fx-2026-11-20');
    assert.deepEqual(
      effects.map((e) => [e.action, e.entryId]),
      ids.map((id) => ['post', id]),
    );
    assert.equal(entries.length, 3);
    assert.deepEqual(trail(), [
      ['post', 201, true, undefined],
      ['post', 201, true, undefined],
      ['post', 201, true, undefined],
    ]);
    assert.deepEqual(
      partner.ledger.entries({ path: '/journal-entries' }).map((e) => e.journalEntryId),
      ids,
    );
  });

  void it('lookup by reference lists that reference’s entries oldest first, any status', async () => {
    const a = await post(partner.url, 'ref-a');
    await post(partner.url, 'ref-b');
    const a2 = await post(partner.url, 'ref-a');
    await voidIt(partner.url, a.body.id ?? '');
    const found = await lookup(partner.url, 'ref-a');
    assert.equal(found.status, 200);
    assert.deepEqual(Object.keys(found.body), ['data']);
    assert.deepEqual(
      found.body.data?.map((e) => [e.id, e.status]),
      [
        [a.body.id, 'voided'],
        [a2.body.id, 'posted'],
      ],
    );
    assert.deepEqual((await lookup(partner.url, 'ref-none')).body, { data: [] });
    const missing = await call(partner.url, 'GET', '/journal-entries');
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error, 'missing_reference');
  });

  void it('lines must balance and a reference is required (422); nothing is posted for a refused entry', async () => {
    const cases: [unknown, number, string][] = [
      [
        {
          reference: 'r',
          lines: [
            { account: 'a', amount: '10.00' },
            { account: 'b', amount: '-9.99' },
          ],
        },
        422,
        'unbalanced',
      ],
      [{ reference: 'r', lines: [{ account: 'a', amount: '0.000001' }] }, 422, 'unbalanced'],
      [{ lines: LINES }, 422, 'invalid_reference'],
      [{ reference: '', lines: LINES }, 422, 'invalid_reference'],
      [{ reference: 'r', lines: [] }, 422, 'invalid_journal_entry'],
      [{ reference: 'r', lines: [{ account: 'a', amount: 1 }] }, 422, 'invalid_journal_entry'],
      [{ reference: 'r', lines: [{ account: 'a', amount: '1.1234567' }] }, 422, 'invalid_journal_entry'],
      [{ reference: 'r', lines: [{ amount: '0' }] }, 422, 'invalid_journal_entry'],
      ['{"reference": ', 400, 'invalid_json'],
    ];
    for (const [body, status, error] of cases) {
      const reply = await call(partner.url, 'POST', '/journal-entries', body);
      assert.equal(reply.status, status, JSON.stringify(body));
      assert.equal(reply.body.error, error, JSON.stringify(body));
      assert.equal(typeof reply.body.message, 'string');
    }
    assert.deepEqual(await admin(partner.url), { entries: [], effects: [] });
    assert.ok(trail().every(([, , effect]) => effect === false));
    const balanced = [
      { account: 'a', amount: '10' },
      { account: 'b', amount: '-9.5' },
      { account: 'c', amount: '-0.500000' },
    ];
    assert.equal((await post(partner.url, 'r', balanced)).status, 201, 'amounts are summed exactly');
  });

  void it('void: 200 voided, repeat-safe (one effect), 404 for an unknown id; there is no confirm', async () => {
    const { body: entry } = await post(partner.url, 'to-void');
    const id = entry.id ?? '';
    const voided = await voidIt(partner.url, id);
    assert.equal(voided.status, 200);
    assert.deepEqual(voided.body, { ...entry, status: 'voided' });
    const again = await voidIt(partner.url, id);
    assert.deepEqual(again, voided, 'a voided entry comes back unchanged');
    assert.deepEqual(
      (await admin(partner.url, 'to-void')).effects.map((e) => e.action),
      ['post', 'void'],
    );
    assert.equal((await voidIt(partner.url, 'je_999')).status, 404);
    assert.equal((await call(partner.url, 'POST', `/journal-entries/${id}/confirm`)).status, 404);
    assert.equal((await call(partner.url, 'GET', `/journal-entries/${id}/void`)).status, 405);
    assert.equal((await call(partner.url, 'DELETE', '/journal-entries')).status, 405);
    assert.deepEqual(trail().slice(1, 3), [
      ['void', 200, true, undefined],
      ['void', 200, false, undefined],
    ]);
  });

  void it('faults before the effect post nothing; after it, the entry exists and a blind retry duplicates it', async () => {
    partner.faults.add({ route: 'journal', action: 'post', kind: 'status', status: 503 });
    assert.equal((await post(partner.url, 'f-before')).status, 503);
    partner.faults.add({ route: 'journal', action: 'post', kind: 'reset' });
    await assert.rejects(post(partner.url, 'f-before'));
    assert.equal((await admin(partner.url, 'f-before')).effects.length, 0);

    partner.faults.add({
      route: 'journal',
      reference: 'f-after',
      kind: 'status',
      status: 500,
      phase: 'after',
    });
    assert.equal((await post(partner.url, 'f-after')).status, 500);
    partner.faults.add({ route: 'journal', reference: 'f-after', kind: 'reset', phase: 'after' });
    await assert.rejects(post(partner.url, 'f-after'), 'the answer is lost');
    assert.equal((await post(partner.url, 'f-after')).status, 201, 'the retry');
    assert.equal((await lookup(partner.url, 'f-after')).body.data?.length, 3, 'three entries for one intent');
    assert.deepEqual(trail(), [
      ['post', 503, false, 'status'],
      ['post', 0, false, 'reset'],
      ['post', 500, true, 'status'],
      ['post', 0, true, 'reset'],
      ['post', 201, true, undefined],
      ['lookup', 200, false, undefined],
    ]);
  });

  void it('a void fault after the effect: the entry is voided although the client saw an error', async () => {
    const { body: entry } = await post(partner.url, 'void-after');
    partner.faults.add({ route: 'journal', action: 'void', kind: 'status', status: 502, phase: 'after' });
    assert.equal((await voidIt(partner.url, entry.id ?? '')).status, 502);
    assert.equal(partner.journal.get(entry.id ?? '')?.status, 'voided');
    assert.deepEqual(trail().at(-1), ['void', 502, true, 'status']);
  });

  void it('a delay the client waits out posts once; one it abandons posts nothing without a late-effect window', async () => {
    partner.faults.add({ route: 'journal', kind: 'delay', delayMs: 50 });
    assert.equal((await post(partner.url, 'slow')).status, 201);
    partner.faults.add({ route: 'journal', kind: 'delay', delayMs: 60_000 });
    await assert.rejects(post(partner.url, 'gone', LINES, AbortSignal.timeout(100)), {
      name: 'TimeoutError',
    });
    await waitFor(() => partner.ledger.count({ status: 499 }) === 1, 'the 499 entry');
    assert.equal((await admin(partner.url, 'gone')).effects.length, 0);
    assert.deepEqual(trail(), [
      ['post', 201, true, 'delay'],
      ['post', 499, false, 'client_closed'],
    ]);
  });

  void it('late effect: a post whose client timed out is still applied when the delay ends, and counted', async () => {
    partner.faults.add({ route: 'journal', kind: 'delay', delayMs: 300, lateEffectMs: 1_000 });
    await assert.rejects(post(partner.url, 'late', LINES, AbortSignal.timeout(100)), {
      name: 'TimeoutError',
    });
    await waitFor(() => partner.ledger.count({ path: '/journal-entries' }) > 0, 'the late entry');
    const { entries, effects } = await admin(partner.url, 'late');
    assert.equal(entries.length, 1, 'the client got no answer, yet the entry is booked');
    assert.deepEqual(
      effects.map((e) => [e.action, e.entryId]),
      [['post', entries[0]?.id]],
    );
    assert.deepEqual(
      partner.ledger.entries().map((e) => [e.action, e.status, e.fault, e.effect, e.late, e.journalEntryId]),
      [['post', 499, 'client_closed', true, true, entries[0]?.id]],
    );
    assert.equal((await post(partner.url, 'late')).status, 201, 'the client retries blindly');
    assert.equal((await admin(partner.url, 'late')).effects.length, 2, 'and books twice');
  });

  void it('the server-wide late-effect window applies to journal posts too', async () => {
    const late = await startPartner({ port: 0, lateEffectMs: 1_000 });
    try {
      late.faults.add({ route: 'journal', kind: 'delay', delayMs: 300 });
      await assert.rejects(post(late.url, 'late-server', LINES, AbortSignal.timeout(100)));
      await waitFor(() => late.ledger.count() > 0, 'the late entry');
      assert.equal(late.journal.effects('late-server').length, 1);
      assert.equal(late.ledger.entries()[0]?.late, true);
    } finally {
      await late.close();
    }
  });

  void it('admin: lists entries and effects (per reference) and DELETE clears both; ids keep increasing', async () => {
    const { body: one } = await post(partner.url, 'adm-1');
    await post(partner.url, 'adm-2');
    await voidIt(partner.url, one.id ?? '');
    const all = await admin(partner.url);
    assert.equal(all.entries.length, 2);
    // Effect numbers keep increasing across clear(), like entry ids: count them from the first.
    const firstSeq = all.effects[0]?.seq ?? NaN;
    assert.deepEqual(
      all.effects.map((e) => [e.seq - firstSeq, e.action, e.reference]),
      [
        [0, 'post', 'adm-1'],
        [1, 'post', 'adm-2'],
        [2, 'void', 'adm-1'],
      ],
    );
    assert.equal((await admin(partner.url, 'adm-1')).effects.length, 2);
    const cleared = await fetch(`${partner.url}/_admin/journal-entries`, { method: 'DELETE' });
    assert.deepEqual(await cleared.json(), { cleared: 2 });
    assert.deepEqual(await admin(partner.url), { entries: [], effects: [] });
    const { body: next } = await post(partner.url, 'adm-3');
    assert.notEqual(next.id, one.id);
    const filtered = await fetch(`${partner.url}/_admin/ledger?action=post`);
    assert.equal(
      ((await filtered.json()) as { entries: unknown[] }).entries.length,
      3,
      'the ledger filters by action',
    );
  });

  void it('refuses fault specs that do not fit the journal route', async () => {
    const refused: unknown[] = [
      { route: 'journal', kind: 'truncate' },
      { route: 'journal', kind: 'status', status: 503, action: 'confirm' },
      { route: 'submissions', kind: 'status', status: 503, action: 'post' },
      { route: 'journal', kind: 'reset', action: 'lookup', phase: 'after' },
      { route: 'journal', kind: 'reset', lateEffectMs: 10 },
      { route: 'journal', kind: 'status', status: 503, date: '2026-11-20' },
    ];
    for (const spec of refused) {
      const res = await fetch(`${partner.url}/_admin/faults`, { method: 'POST', body: JSON.stringify(spec) });
      assert.equal(res.status, 400, JSON.stringify(spec));
    }
    const ok = await fetch(`${partner.url}/_admin/faults`, {
      method: 'POST',
      body: JSON.stringify({
        route: 'journal',
        action: 'post',
        kind: 'delay',
        delayMs: 10,
        lateEffectMs: 10,
      }),
    });
    assert.equal(ok.status, 201);
  });
});
