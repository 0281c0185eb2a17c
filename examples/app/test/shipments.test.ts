/**
 * The shipments job end to end on the real engine (a real worker, Temporal and PostgreSQL through
 * durable-fetch/testing) against a carrier that behaves like one: pages, a 429 with Retry-After,
 * a bearer token it checks, an invoice API that is not idempotent. Judged by the carrier's own
 * records and this application's table, not by what the run reports.
 * Needs DATABASE_URL (a server where this role may create databases) and TEMPORAL_ADDRESS (or a
 * `temporal` CLI to start a dev server with).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { jobTestKit, testPartner, type JobKit, type TestPartner } from 'durable-fetch/testing';
import { syncNow } from '../src/start-fetch.ts';
import { jobs } from '../src/jobs/index.ts';

const TOKEN = 'carrier-test-token';
const DAY = '2026-11-20';
/** The carrier's shipments of DAY: 250 of them, served 100 at a time. */
const SHIPMENTS = Array.from({ length: 250 }, (_, i) => ({
  id: `shp_${String(i).padStart(4, '0')}`,
  shipped_on: DAY,
  status: i % 7 === 0 ? 'delivered' : 'in_transit',
  weight_grams: 100 + i,
}));

let partner: TestPartner;
let kit: JobKit;
/** The carrier's invoices (its own ledger), by id. */
const invoices = new Map<
  string,
  { id: string; reference: string; status: 'open' | 'void'; shipments: number }
>();
let throttled = false;

before(async () => {
  partner = await testPartner({
    'GET /v1/shipments': (req) => {
      if (req.headers.authorization !== `Bearer ${TOKEN}`)
        return { status: 401, body: { error: 'unauthorized' } };
      // The carrier throttles the second page once, as carriers do under load.
      if (req.query.get('cursor') && !throttled) {
        throttled = true;
        return { status: 429, headers: { 'retry-after': '1' }, body: { error: 'rate_limited' } };
      }
      const from = Number(req.query.get('cursor') ?? '0');
      const limit = Math.min(Number(req.query.get('limit') ?? '100'), 100);
      const items = SHIPMENTS.filter((s) => s.shipped_on === req.query.get('shipped_on')).slice(
        from,
        from + limit,
      );
      const next = from + limit < SHIPMENTS.length ? String(from + limit) : null;
      return { body: { items, next_cursor: next } };
    },
    'POST /v1/invoices': (req) => {
      const body = req.body as { reference: string; shipments: number };
      const invoice = {
        id: `inv_${invoices.size + 1}`,
        reference: body.reference,
        status: 'open' as const,
        shipments: body.shipments,
      };
      invoices.set(invoice.id, invoice);
      return { status: 201, body: invoice };
    },
    'GET /v1/invoices': (req) => ({
      body: { data: [...invoices.values()].filter((i) => i.reference === req.query.get('reference')) },
    }),
  });
  kit = await jobTestKit({
    jobs,
    secrets: { DF_SECRET_ACME_CARRIER: TOKEN },
    migrations: ['prisma/migrations'],
  });
  await kit.addSource({
    id: 'acme-carrier',
    jobType: 'shipments',
    baseUrl: partner.url,
    credentialsRef: 'DF_SECRET_ACME_CARRIER',
    pageSize: 100,
    submitSummary: true,
    config: { invoiceAccount: 'acme-logistics' },
  });
});

after(async () => {
  await kit?.close();
  await partner?.close();
});

test('a run stores every shipment the carrier holds, once, and posts exactly one invoice', async () => {
  const run = await kit.run('acme-carrier', DAY);
  assert.equal(run.status, 'succeeded', `run ended ${run.status} (${run.errorType ?? ''})`);
  assert.ok(throttled, 'the carrier throttled the run once');

  const db = new pg.Client({ connectionString: kit.databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ id: string }>('SELECT id FROM public.shipment ORDER BY id');
    assert.deepEqual(
      rows.map((r) => r.id),
      SHIPMENTS.map((s) => s.id),
    );
  } finally {
    await db.end();
  }
  const [invoice, ...others] = invoices.values();
  assert.equal(others.length, 0, 'one invoice');
  assert.equal(invoice?.shipments, SHIPMENTS.length);
  assert.deepEqual(
    run.actions.map((a) => [a.action, a.state, a.partnerId]),
    [['post-invoice', 'confirmed', invoice?.id]],
  );
  assert.equal(
    run.events.filter((e) => e.topic === 'shipments.stored').length,
    3,
    'one event per stored page',
  );
});

test("the application's own startFetch joins the finished run instead of fetching again", async () => {
  const calls = partner.requests.length;
  const again = await syncNow(kit.context, 'acme-carrier', DAY);
  assert.equal(again.joined, true);
  assert.equal(partner.requests.length, calls, 'the carrier was not called again');
  assert.equal(invoices.size, 1, 'no second invoice');
});
