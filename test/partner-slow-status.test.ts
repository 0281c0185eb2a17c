// The demo partner's slow error: a `status` fault with `delayMs` on a read route answers its status
// only after the wait, as an overloaded partner's 503 does (R8's breaker must keep such a partner
// from holding every worker slot). Real sockets, the ledger as the judge.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { type PartnerServer, startPartner } from '../partner/server.ts';

void describe('partner: slow error (status with delayMs)', () => {
  let partner: PartnerServer;
  let records: string;
  before(async () => {
    partner = await startPartner({ port: 0, recordCount: () => 30 });
    records = `${partner.url}/sources/slow/records?date=2026-12-01`;
  });
  beforeEach(() => {
    partner.faults.clear();
    partner.ledger.clear();
  });
  after(() => partner.close());

  void it('slow status: the status comes after delayMs, recorded once as a status fault; the next request is served at once', async () => {
    partner.faults.add({ sourceId: 'slow', kind: 'status', status: 503, delayMs: 300, times: 1 });
    const started = performance.now();
    const res = await fetch(records);
    const waited = performance.now() - started;
    assert.equal(res.status, 503);
    assert.deepEqual(await res.json(), { error: 'injected_fault', message: 'injected status 503' });
    // The timer may fire a moment early by the clock read here; never much.
    assert.ok(waited >= 290, `answered after ${waited} ms, not after the 300 ms wait`);
    assert.deepEqual(
      partner.ledger.entries().map((e) => [e.status, e.fault]),
      [[503, 'status']],
    );
    assert.equal((await fetch(records)).status, 200);
  });

  void it('slow status: a client that leaves during the wait is recorded as client_closed, then the status', async () => {
    partner.faults.add({ kind: 'status', status: 500, delayMs: 300 });
    await assert.rejects(fetch(records, { signal: AbortSignal.timeout(50) }), { name: 'TimeoutError' });
    await new Promise((r) => setTimeout(r, 400));
    assert.deepEqual(
      partner.ledger.entries().map((e) => [e.status, e.fault]),
      [
        [499, 'client_closed'],
        [500, 'status'],
      ],
    );
  });

  void it('slow status: closing the partner during the wait leaves no entry', async () => {
    const closing = await startPartner({ port: 0, recordCount: () => 30 });
    closing.faults.add({ kind: 'status', status: 503, delayMs: 60_000 });
    const pending = fetch(`${closing.url}/sources/slow/records?date=2026-12-01`).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    await closing.close();
    await pending;
    assert.equal(closing.ledger.count(), 0);
  });

  void it('slow status: delayMs only with kind delay, or status on the read routes', () => {
    for (const spec of [
      { route: 'rates', kind: 'status', status: 503, delayMs: 10 },
      { route: 'catalog', kind: 'status', status: 503, delayMs: 10 },
    ] as const) {
      partner.faults.add(spec);
    }
    for (const spec of [
      { kind: 'reset', delayMs: 10 },
      { route: 'events', kind: 'status', status: 503, delayMs: 10 },
      { route: 'submissions', kind: 'status', status: 503, delayMs: 10 },
    ] as const) {
      assert.throws(
        () => partner.faults.add(spec),
        /"delayMs" is only valid with kind "delay", or kind "status" on the read routes/,
        JSON.stringify(spec),
      );
    }
  });
});
