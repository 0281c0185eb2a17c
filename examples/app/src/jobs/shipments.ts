/**
 * The `shipments` job: a carrier's shipments of a day, into this application's own `shipment`
 * table, and one invoice per run posted to the carrier's billing API downstream.
 *
 * The carrier (docs of a typical carrier API): `GET /v1/shipments?shipped_on=<date>&limit&cursor`
 * → `{ items: [...], next_cursor }`, bearer token, 429 with Retry-After when called too fast.
 * `POST /v1/invoices` is not idempotent (no Idempotency-Key): an invoice is found again by its
 * `reference` (`GET /v1/invoices?reference=`) and undone by `POST /v1/invoices/<id>/void`.
 */
import { z } from 'zod';
import { defineJob, failure, type DownstreamContext, type FetchContext } from 'durable-fetch/job';

const configSchema = z.strictObject({
  /** The account the carrier bills each run's invoice to. */
  invoiceAccount: z.string().min(1).max(60),
});
type Config = z.infer<typeof configSchema>;

const shipmentSchema = z.looseObject({
  id: z.string().min(1).max(100),
  shipped_on: z.iso.date(),
  status: z.enum(['label_created', 'in_transit', 'delivered', 'returned']),
  weight_grams: z.number().int().nonnegative(),
});
type Shipment = z.infer<typeof shipmentSchema>;

const pageSchema = z.object({ items: z.array(shipmentSchema), next_cursor: z.string().nullable() });
const invoiceSchema = z.looseObject({
  id: z.string().min(1),
  reference: z.string(),
  status: z.enum(['open', 'void']),
});

/** Topic of the event each stored page emits (delivered by the engine's outbox). */
export const SHIPMENTS_STORED = 'shipments.stored';

function endpoint(ctx: { source: { baseUrl: string } }, path: string): URL {
  return new URL(path, ctx.source.baseUrl.endsWith('/') ? ctx.source.baseUrl : `${ctx.source.baseUrl}/`);
}

function headers(ctx: { token: string | undefined }): Record<string, string> {
  return { accept: 'application/json', ...(ctx.token ? { authorization: `Bearer ${ctx.token}` } : {}) };
}

async function fetchShipments(ctx: FetchContext<Config>) {
  const what = `carrier ${ctx.source.id} shipments`;
  const url = endpoint(ctx, 'v1/shipments');
  url.searchParams.set('shipped_on', ctx.businessDate);
  url.searchParams.set('limit', String(ctx.limit));
  if (ctx.cursor !== null) url.searchParams.set('cursor', ctx.cursor);
  const body = await ctx.http.getJson(url, { signal: ctx.signal, headers: headers(ctx), what });
  const page = pageSchema.safeParse(body);
  if (!page.success) throw failure('InvalidResponse', 'PAGE_SHAPE', `${what}: unexpected response shape`);
  return { records: page.data.items, nextCursor: page.data.next_cursor };
}

function invoiceOf(body: unknown, what: string) {
  const invoice = invoiceSchema.safeParse(body);
  if (!invoice.success)
    throw failure('InvalidResponse', 'INVOICE_SHAPE', `${what}: unexpected response shape`);
  return { id: invoice.data.id, status: invoice.data.status, voided: invoice.data.status === 'void' };
}

async function voidInvoice(ctx: DownstreamContext<Config>, id: string) {
  const what = `carrier ${ctx.source.id} invoice void`;
  const url = endpoint(ctx, `v1/invoices/${encodeURIComponent(id)}/void`);
  return invoiceOf(
    await ctx.http.postJson(url, {}, { signal: ctx.signal, headers: headers(ctx), what }),
    what,
  );
}

export const shipmentsJob = defineJob<Config, Shipment>({
  type: 'shipments',
  description: "a carrier's shipments of the day into the app's shipment table, invoiced downstream",
  config: configSchema,
  recordId: (shipment) => shipment.id,
  fetchPage: fetchShipments,

  // The page's transaction: these rows commit together with the engine's own bookkeeping, or not
  // at all. The table is the application's (prisma/schema.prisma), in `public`.
  async storePage(_tx, records, ctx) {
    for (const { record } of records) {
      await ctx.sql.$executeRaw`
        INSERT INTO public.shipment (id, source_id, shipped_on, status, weight_grams, fetch_run_id, updated_at)
        VALUES (${record.id}, ${ctx.source.id}, ${record.shipped_on}::date, ${record.status},
                ${record.weight_grams}, ${ctx.fetchRunId}::uuid, ${ctx.now})
        ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, weight_grams = EXCLUDED.weight_grams,
          fetch_run_id = EXCLUDED.fetch_run_id, updated_at = EXCLUDED.updated_at`;
    }
    const payload = { sourceId: ctx.source.id, shippedOn: ctx.businessDate, ids: records.map((r) => r.id) };
    return { events: [{ topic: SHIPMENTS_STORED, payload }] };
  },

  downstream: {
    name: 'post-invoice',
    async submit(ctx) {
      const what = `carrier ${ctx.source.id} invoice`;
      const body = await ctx.http.postJson(
        endpoint(ctx, 'v1/invoices'),
        { reference: ctx.reference, account: ctx.source.config.invoiceAccount, shipments: ctx.run.records },
        { signal: ctx.signal, headers: headers(ctx), what, sendBy: ctx.sendBy },
      );
      return invoiceOf(body, what);
    },
    async lookup(ctx, reference) {
      const what = `carrier ${ctx.source.id} invoice lookup`;
      const url = endpoint(ctx, 'v1/invoices');
      url.searchParams.set('reference', reference);
      const body = await ctx.http.getJson(url, { signal: ctx.signal, headers: headers(ctx), what });
      const list = z.object({ data: z.array(z.unknown()) }).safeParse(body);
      if (!list.success)
        throw failure('InvalidResponse', 'LOOKUP_SHAPE', `${what}: unexpected response shape`);
      return list.data.data.map((invoice) => invoiceOf(invoice, what));
    },
    void: voidInvoice,
  },
});
