import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { Agent, get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultRecordCount, type RecordsPage } from '../partner/records.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';

async function getJson(
  url: string,
  init?: RequestInit,
): Promise<{ status: number; body: unknown; text: string }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as unknown, text };
}

void describe('partner: records', () => {
  let partner: PartnerServer;
  before(async () => {
    partner = await startPartner({ port: 0, recordCount: (_s, date) => (date === '2024-03-01' ? 137 : 60) });
  });
  after(() => partner.close());

  void it('paging with a limit returns every record exactly once and total matches recordCount', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `&cursor=${cursor}` : '';
      const { status, body } = await getJson(
        `${partner.url}/sources/acme/records?date=2024-03-01&limit=20${query}`,
      );
      assert.equal(status, 200);
      const page = body as RecordsPage;
      assert.equal(page.total, 137);
      assert.ok(page.records.length <= 20);
      seen.push(...page.records.map((r) => r.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null);
    assert.equal(pages, 7);
    assert.equal(new Set(seen).size, 137);
    assert.equal(seen[0], 'acme-2024-03-01-00001');
    assert.equal(seen[136], 'acme-2024-03-01-00137');
  });

  void it('clamps limit to maxPageSize and serves records of the documented shape', async () => {
    const { body } = await getJson(`${partner.url}/sources/acme/records?date=2024-03-01&limit=500`);
    const page = body as RecordsPage;
    assert.equal(page.records.length, 50);
    for (const r of page.records) {
      assert.match(r.amount, /^\d+\.\d{2}$/);
      assert.ok(['EUR', 'USD', 'GBP'].includes(r.currency));
      assert.ok(r.updatedAt.startsWith('2024-03-01T'));
      assert.equal(r.date, '2024-03-01');
    }
  });

  void it('serves identical bodies for the same query, across server instances, and different ones per date', async () => {
    const url = (base: string, date: string) => `${base}/sources/acme/records?date=${date}&limit=10`;
    const first = await getJson(url(partner.url, '2024-03-01'));
    const again = await getJson(url(partner.url, '2024-03-01'));
    assert.equal(again.text, first.text);
    const other = await startPartner({ port: 0, recordCount: () => 137 });
    try {
      assert.equal((await getJson(url(other.url, '2024-03-01'))).text, first.text);
    } finally {
      await other.close();
    }
    const otherDate = (await getJson(url(partner.url, '2024-03-02'))).body as RecordsPage;
    assert.notDeepEqual(
      otherDate.records.map((r) => r.amount),
      (first.body as RecordsPage).records.map((r) => r.amount),
    );
  });

  void it('answers 400 invalid_date, invalid_cursor and invalid_limit; a future date works', async () => {
    const base = `${partner.url}/sources/acme/records`;
    for (const q of ['', '?date=2024-02-30', '?date=20240301', '?date=2024-3-1']) {
      const { status, body } = await getJson(base + q);
      assert.equal(status, 400, q);
      assert.equal((body as { error: string }).error, 'invalid_date');
    }
    const beyond = Buffer.from('v1:138').toString('base64url');
    for (const cursor of ['zzz', '!!', '', beyond, Buffer.from('v1:1').toString('base64url')]) {
      const { status, body } = await getJson(`${base}?date=2024-03-01&cursor=${cursor}`);
      assert.equal(status, 400, cursor);
      assert.equal((body as { error: string }).error, 'invalid_cursor');
    }
    for (const limit of ['0', '501', 'x', '-1', '1.5']) {
      const { status } = await getJson(`${base}?date=2024-03-01&limit=${limit}`);
      assert.equal(status, 400, limit);
    }
    assert.equal((await getJson(`${base}?date=2999-12-31`)).status, 200);
    assert.equal((await getJson(`${partner.url}/nope`)).status, 404);
  });

  void it('default record count is deterministic and within 150..400', () => {
    for (let day = 1; day <= 28; day++) {
      const date = `2024-02-${String(day).padStart(2, '0')}`;
      const n = defaultRecordCount('acme', date);
      assert.ok(n >= 150 && n <= 400, `${date}: ${n}`);
      assert.equal(defaultRecordCount('acme', date), n);
    }
  });
});

void describe('partner: ledger', () => {
  void it('counts requests by filter, records idempotency keys and never Authorization values', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'partner-ledger-'));
    const ledgerFile = join(dir, 'ledger.jsonl');
    const partner = await startPartner({ port: 0, recordCount: () => 30, maxPageSize: 20, ledgerFile });
    try {
      const headers = {
        'Idempotency-Key': 'fetch-records:acme:2024-03-01:page:1',
        Authorization: 'Bearer s3cret',
      };
      const first = await getJson(`${partner.url}/sources/acme/records?date=2024-03-01`, { headers });
      const next = (first.body as RecordsPage).nextCursor ?? '';
      await getJson(`${partner.url}/sources/acme/records?date=2024-03-01&cursor=${next}`);
      await getJson(`${partner.url}/sources/other/records?date=2024-03-01`);
      await getJson(`${partner.url}/healthz`);

      assert.equal(partner.ledger.count(), 3, 'healthz is not recorded');
      assert.equal(partner.ledger.count({ sourceId: 'acme', date: '2024-03-01' }), 2);
      assert.equal(partner.ledger.count({ sourceId: 'acme', cursor: null }), 1);
      assert.equal(partner.ledger.count({ cursor: next }), 1);
      const [entry] = partner.ledger.entries({ sourceId: 'acme', cursor: null });
      assert.equal(entry?.idempotencyKey, 'fetch-records:acme:2024-03-01:page:1');
      assert.equal(entry?.auth, true);
      assert.equal(entry?.status, 200);
      assert.equal(partner.ledger.entries({ sourceId: 'other' })[0]?.auth, false);

      const admin = await getJson(`${partner.url}/_admin/ledger?sourceId=acme&date=2024-03-01`);
      assert.equal((admin.body as { entries: unknown[] }).entries.length, 2);
      assert.ok(!admin.text.includes('s3cret'));
      const file = readFileSync(ledgerFile, 'utf8');
      assert.equal(file.trimEnd().split('\n').length, 3);
      assert.ok(!file.includes('s3cret'));

      assert.equal((await fetch(`${partner.url}/_admin/ledger`, { method: 'DELETE' })).status, 200);
      assert.equal(partner.ledger.count(), 0);
    } finally {
      await partner.close();
    }
    const restarted = await startPartner({ port: 0, ledgerFile });
    try {
      await getJson(`${restarted.url}/sources/acme/records?date=2024-03-01`);
      assert.equal(restarted.ledger.entries()[0]?.seq, 4, 'numbering continues after a restart');
    } finally {
      await restarted.close();
    }
  });
});

// A broken close() hangs rather than failing: the timeout turns that into a failure.
void describe('partner: close', { timeout: 5000 }, () => {
  void it('resolves promptly with an idle keep-alive connection open', async () => {
    const partner = await startPartner({ port: 0 });
    const agent = new Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) => {
      get(`${partner.url}/healthz`, { agent }, (res) => {
        res.resume();
        res.on('end', resolve);
      }).on('error', reject);
    });
    assert.equal(Object.values(agent.freeSockets).flat().length, 1, 'an idle keep-alive socket is open');
    const started = Date.now();
    await partner.close();
    assert.ok(Date.now() - started < 1000, `close took ${Date.now() - started} ms`);
    agent.destroy();
  });

  void it('resolves promptly with a delayed response pending and cancels it', async () => {
    const partner = await startPartner({ port: 0 });
    partner.faults.add({ kind: 'delay', delayMs: 200 });
    const pending = fetch(`${partner.url}/sources/acme/records?date=2024-03-01`);
    while (partner.faults.list().length > 0) await new Promise((r) => setTimeout(r, 5));
    const started = Date.now();
    await partner.close();
    assert.ok(Date.now() - started < 1000, `close took ${Date.now() - started} ms`);
    await assert.rejects(pending);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(partner.ledger.count(), 0, 'the delayed response was cancelled, never served');
  });
});
