/**
 * The `exchange-rates` job: a team's own job in one file, written with the public job API only.
 * It reads a Stripe-style list (`GET /rates?date&limit&starting_after → {data, has_more}`), keeps
 * one row per (source, base, quote, date) in its own table `exchange_rate`
 * (prisma/schema/exchange-rates.prisma), emits one `fx.rates_stored` event per page, and posts a
 * journal entry downstream (`POST /journal-entries`, not idempotent; looked up by reference,
 * undone by `void`; posting is final, so there is no confirm step).
 */
import { z } from 'zod';
import {
  defineJob,
  type DownstreamContext,
  failure,
  type FetchContext,
} from '../activities/job-api/index.ts';

/** The job's per-source config (`sources add --config`): the accounts of its journal entry. */
const configSchema = z.strictObject({
  /** Account the imported rates are booked to. */
  account: z.string().min(1).max(60).default('fx:rates-imported'),
  /** Its balancing account. */
  counterAccount: z.string().min(1).max(60).default('fx:suspense'),
});
type Config = z.infer<typeof configSchema>;

const currency = z.string().regex(/^[A-Z]{3}$/);
const rateSchema = z.looseObject({
  id: z.string().min(1).max(200),
  base: currency,
  quote: currency,
  rate: z.string().regex(/^\d{1,12}(\.\d{1,12})?$/),
  date: z.iso.date(),
});
type Rate = z.infer<typeof rateSchema>;

const listSchema = z.object({ data: z.array(rateSchema), has_more: z.boolean() });

const entrySchema = z.looseObject({
  id: z.string().min(1).max(200),
  reference: z.string(),
  status: z.enum(['posted', 'voided']),
});
const entriesSchema = z.object({ data: z.array(entrySchema) });

/** Topic of the event each stored page emits. */
export const RATES_STORED_TOPIC = 'fx.rates_stored';

function url(ctx: { source: { baseUrl: string } }, path: string): URL {
  const base = ctx.source.baseUrl.endsWith('/') ? ctx.source.baseUrl : `${ctx.source.baseUrl}/`;
  return new URL(path, base);
}

function headers(ctx: { token: string | undefined }): Record<string, string> {
  return {
    accept: 'application/json',
    ...(ctx.token === undefined ? {} : { authorization: `Bearer ${ctx.token}` }),
  };
}

async function fetchRates(ctx: FetchContext<Config>) {
  const what = `partner ${ctx.source.id} rates`;
  const u = url(ctx, 'rates');
  u.searchParams.set('date', ctx.businessDate);
  u.searchParams.set('limit', String(Math.min(ctx.limit, 100)));
  if (ctx.cursor !== null) u.searchParams.set('starting_after', ctx.cursor);
  const body = await ctx.http.getJson(u, { signal: ctx.signal, headers: headers(ctx), what });
  const parsed = listSchema.safeParse(body);
  if (!parsed.success) throw failure('InvalidResponse', 'PAGE_SHAPE', `${what}: unexpected response shape`);
  const { data, has_more } = parsed.data;
  const last = data.at(-1);
  if (has_more && !last) {
    // Nothing to continue after: a partner that pages forever without data.
    throw failure('InvalidResponse', 'EMPTY_PAGE_WITH_CURSOR', `${what}: has_more with no data`);
  }
  return { records: data, nextCursor: has_more && last ? last.id : null };
}

function effectOf(body: unknown, what: string) {
  const parsed = entrySchema.safeParse(body);
  if (!parsed.success) throw failure('InvalidResponse', 'ENTRY_SHAPE', `${what}: unexpected response shape`);
  return { id: parsed.data.id, status: parsed.data.status, voided: parsed.data.status === 'voided' };
}

async function voidEntry(ctx: DownstreamContext<Config>, id: string) {
  const what = `partner ${ctx.source.id} void`;
  const target = url(ctx, `journal-entries/${encodeURIComponent(id)}/void`);
  const body = await ctx.http.postJson(target, {}, { signal: ctx.signal, headers: headers(ctx), what });
  return effectOf(body, what);
}

export const exchangeRatesJob = defineJob<Config, Rate>({
  type: 'exchange-rates',
  description: 'daily exchange rates from a Stripe-style list API into exchange_rate, journalled downstream',
  config: configSchema,
  recordId: (rate) => rate.id,
  fetchPage: fetchRates,

  async storePage(tx, records, ctx) {
    for (const { record } of records) {
      const key = {
        sourceId: ctx.source.id,
        base: record.base,
        quote: record.quote,
        rateDate: new Date(`${record.date}T00:00:00Z`),
      };
      const values = { rate: record.rate, fetchRunId: ctx.fetchRunId, updatedAt: ctx.now };
      await tx.exchangeRate.upsert({
        where: { sourceId_base_quote_rateDate: key },
        create: { ...key, ...values, createdAt: ctx.now },
        update: values,
      });
    }
    const payload = {
      fetchRunId: ctx.fetchRunId,
      sourceId: ctx.source.id,
      businessDate: ctx.businessDate,
      pageNo: ctx.pageNo,
      pairs: records.map((r) => r.id),
    };
    return { events: [{ topic: RATES_STORED_TOPIC, payload }] };
  },

  reconcile: {
    listedIds(event) {
      if (event.topic !== RATES_STORED_TOPIC) return undefined;
      const pairs = (event.payload as { pairs?: unknown } | null)?.pairs;
      return Array.isArray(pairs) ? pairs.filter((p): p is string => typeof p === 'string') : [];
    },
    async existingIds(db, run, ids) {
      const rows = await db.exchangeRate.findMany({
        where: { sourceId: run.sourceId, rateDate: new Date(`${run.businessDate}T00:00:00Z`) },
        select: { base: true, quote: true },
      });
      const wanted = new Set(ids);
      return rows.map((r) => `${r.base}${r.quote}`).filter((id) => wanted.has(id));
    },
    async runIds(db, run) {
      const rows = await db.exchangeRate.findMany({
        where: { sourceId: run.sourceId, fetchRunId: run.fetchRunId },
        select: { base: true, quote: true },
      });
      return rows.map((r) => `${r.base}${r.quote}`);
    },
  },

  downstream: {
    name: 'post-journal',
    async submit(ctx) {
      const what = `partner ${ctx.source.id} journal entry`;
      const amount = `${ctx.run.records}.00`;
      const lines = [
        { account: ctx.source.config.account, amount },
        { account: ctx.source.config.counterAccount, amount: ctx.run.records === 0 ? amount : `-${amount}` },
      ];
      const body = await ctx.http.postJson(
        url(ctx, 'journal-entries'),
        { reference: ctx.reference, lines },
        { signal: ctx.signal, headers: headers(ctx), what, sendBy: ctx.sendBy },
      );
      return effectOf(body, what);
    },
    async lookup(ctx, reference) {
      const what = `partner ${ctx.source.id} journal lookup`;
      const u = url(ctx, 'journal-entries');
      u.searchParams.set('reference', reference);
      const body = await ctx.http.getJson(u, { signal: ctx.signal, headers: headers(ctx), what });
      const parsed = entriesSchema.safeParse(body);
      if (!parsed.success)
        throw failure('InvalidResponse', 'LOOKUP_SHAPE', `${what}: unexpected response shape`);
      return parsed.data.data.map((e) => effectOf(e, what));
    },
    void: voidEntry,
  },
});
