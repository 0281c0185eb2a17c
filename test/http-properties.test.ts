// Property: no run of the declarative `http` job ends `succeeded` with records the partner listed
// missing. Pure: the job's own fetchPage against simulated partners in memory, under the engine's
// checks of every response (checkedPage, and the empty-page, standing-cursor and loop refusals of
// fetch-page.ts) — the same code a run executes, without Temporal or PostgreSQL, so that thousands
// of partners can be tried. Each partner has a shape of a real API (a cursor with null at the end,
// Stripe's has_more with the last id, OData's nextLink left out at the end with a count, HubSpot's
// paging object left out, a GraphQL connection, offset with a total, page numbers with a page
// count, a Link header) and random habits: pages of its own size (smaller, or several times what
// was asked), an empty last page that still carries a cursor, a total that lies. The run must then
// either fail, or have stored exactly the records the partner holds (R3: nothing lost, nothing twice).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { HttpClient, HttpResponse } from '../activities/http.ts';
import type { FetchContext } from '../activities/job-api/index.ts';
import { checkedPage, idOf, MAX_RECORDS_PER_RESPONSE } from '../activities/job-runtime.ts';
import { type HttpJobConfig, httpJobConfigSchema } from '../jobs/http/config.ts';
import { httpJob } from '../jobs/http/index.ts';

const BASE = 'https://partner.example/api';
const STYLES = ['cursor', 'stripe', 'odata', 'hubspot', 'graphql', 'offset', 'page', 'link'] as const;
type Style = (typeof STYLES)[number];

interface Partner {
  style: Style;
  /** How many records it holds. */
  count: number;
  /** Its page size: `asked` honours the request (capped at `max`), `fixed` ignores it. */
  sizing: { kind: 'asked'; max: number } | { kind: 'fixed'; size: number };
  /** It says there is more on its last page, and answers an empty page that says so again. */
  trailingEmpty: boolean;
  /**
   * What it adds to its stated total (0: the truth). Only a lie that a run can see is generated:
   * where the total drives the paging (offset, page numbers), a total below the truth makes the
   * partner stop serving there, and no one can tell it held more.
   */
  totalLie: number;
  /** The config ends on an empty page with a cursor (else the run fails there). */
  emptyPageEnds: boolean;
  /** Records the engine asks for per request. */
  limit: number;
  /**
   * The config's cursor path (or Link rel) names one the partner never sends, where a missing
   * cursor is the end (HubSpot, OData, a Link header): a misread path must not read as the last
   * page. Only with a partner that
   * serves what was asked, so that its pages are full: a partner that always serves less than it
   * is asked for looks the same as its last page, and only a stated total can tell.
   */
  mistake: boolean;
}

const idAt = (i: number) => `r${i}`;

/** The config that describes `p` correctly, as a user would write it. */
function configOf(p: Partner): Record<string, unknown> {
  const emptyPage = p.emptyPageEnds ? 'end' : 'fail';
  const max = p.sizing.kind === 'asked' ? p.sizing.max : p.sizing.size;
  switch (p.style) {
    case 'cursor':
      return {
        request: { path: '/c' },
        records: { path: 'items' },
        pagination: { type: 'cursor', path: 'meta.next_cursor', limitParam: 'limit', limit: max, emptyPage },
      };
    case 'stripe':
      return {
        request: { path: '/s' },
        records: { path: 'data' },
        pagination: {
          type: 'cursor',
          path: 'data[-1].id',
          param: 'starting_after',
          hasMorePath: 'has_more',
          limitParam: 'limit',
          limit: max,
          emptyPage,
        },
      };
    case 'odata':
      return {
        request: { path: '/o', query: { $count: 'true' } },
        records: { path: 'value' },
        pagination: {
          type: 'next_url',
          path: p.mistake ? "['@odata.nextlink']" : "['@odata.nextLink']",
          endWhen: ['absent'],
          totalPath: "['@odata.count']",
          limitParam: '$top',
          limit: max,
          emptyPage,
        },
      };
    case 'hubspot':
      return {
        request: { path: '/h' },
        records: { path: 'results' },
        pagination: {
          type: 'cursor',
          path: p.mistake ? 'paging.next.cursor' : 'paging.next.after',
          param: 'after',
          endWhen: ['absent'],
          limitParam: 'limit',
          limit: max,
          emptyPage,
        },
      };
    case 'graphql':
      return {
        request: {
          method: 'POST',
          path: '/graphql',
          body: {
            query:
              'query($first: Int!, $after: String) { items(first: $first, after: $after) { edges { node { id } } } }',
            variables: { first: '{limit}', after: '{cursor}' },
          },
        },
        records: { path: 'data.items.edges', item: 'node' },
        pagination: {
          type: 'cursor',
          param: null,
          path: 'data.items.pageInfo.endCursor',
          hasMorePath: 'data.items.pageInfo.hasNextPage',
          limit: max,
          emptyPage,
        },
      };
    case 'offset':
      return {
        request: { path: '/off' },
        records: { path: 'records' },
        pagination: { type: 'offset', limit: max, totalPath: 'total' },
      };
    case 'page':
      return {
        request: { path: '/p' },
        records: { path: 'data' },
        pagination: {
          type: 'page_number',
          limitParam: 'per_page',
          limit: max,
          totalPagesPath: 'total_pages',
        },
      };
    case 'link':
      return {
        request: { path: '/l' },
        pagination: {
          type: 'link_header',
          rel: p.mistake ? 'following' : 'next',
          limitParam: 'per_page',
          limit: max,
          emptyPage,
        },
      };
  }
}

/** How many records `p` serves for a request that asked for `asked` (undefined: it did not say). */
function served(p: Partner, asked: number | undefined): number {
  if (p.sizing.kind === 'fixed') return p.sizing.size;
  return Math.min(asked ?? p.sizing.max, p.sizing.max);
}

/** `p`, answering one request. */
function answer(p: Partner, url: URL, body: unknown): HttpResponse {
  const q = url.searchParams;
  const num = (v: string | null | undefined) => (v === null || v === undefined ? undefined : Number(v));
  const vars = (body as { variables?: { first?: number; after?: string } } | undefined)?.variables;
  let from = 0;
  let asked: number | undefined;
  switch (p.style) {
    case 'cursor':
      from = num(q.get('cursor')?.slice(1)) ?? 0;
      asked = num(q.get('limit'));
      break;
    case 'stripe': {
      const after = q.get('starting_after');
      from = after === null ? 0 : Number(after.slice(1)) + 1;
      asked = num(q.get('limit'));
      break;
    }
    case 'odata':
      from = num(q.get('$skiptoken')) ?? 0;
      asked = num(q.get('$top'));
      break;
    case 'hubspot':
    case 'link':
      from = num(q.get('after')) ?? 0;
      asked = num(q.get(p.style === 'link' ? 'per_page' : 'limit'));
      break;
    case 'graphql':
      from = vars?.after === undefined ? 0 : Number(vars.after.slice(1));
      asked = vars?.first;
      break;
    case 'offset':
      from = num(q.get('offset')) ?? 0;
      asked = num(q.get('limit'));
      break;
    case 'page': {
      const size = served(p, num(q.get('per_page')));
      from = ((num(q.get('page')) ?? 1) - 1) * size;
      asked = num(q.get('per_page'));
      break;
    }
  }
  const size = served(p, asked);
  const to = Math.min(p.count, from + size);
  const page = Array.from({ length: Math.max(0, to - from) }, (_, i) => ({
    id: idAt(from + i),
    n: from + i,
  }));
  // A partner with a trailing empty page says there is more on every page, the empty ones too.
  const more = to < p.count || p.trailingEmpty;
  const total = p.count + p.totalLie;
  const link = (at: number) =>
    `${BASE}/${p.style === 'odata' ? 'o' : 'l'}?${p.style === 'odata' ? '$skiptoken' : 'after'}=${at}`;
  const respond = (json: unknown, headers: Record<string, string> = {}): HttpResponse => ({
    status: 200,
    headers,
    body: json,
    url,
  });
  switch (p.style) {
    case 'cursor':
      return respond({ items: page, meta: { next_cursor: more ? `c${to}` : null } });
    case 'stripe':
      // An empty page that says there is more names no last id: Stripe's cursor is the last record.
      return respond({ data: page, has_more: more });
    case 'odata':
      return respond({
        value: page,
        '@odata.count': total,
        ...(more ? { '@odata.nextLink': link(to) } : {}),
      });
    case 'hubspot':
      return respond({ results: page, ...(more ? { paging: { next: { after: String(to) } } } : {}) });
    case 'graphql':
      return respond({
        data: {
          items: {
            edges: page.map((node) => ({ node })),
            pageInfo: { endCursor: more ? `g${to}` : null, hasNextPage: more },
          },
        },
      });
    case 'offset':
      return respond({ records: page, total });
    case 'page': {
      const pageSize = served(p, asked);
      return respond({ data: page, total_pages: Math.ceil(total / pageSize) });
    }
    case 'link':
      return respond(page, more ? { link: `<${link(to)}&per_page=${asked ?? ''}>; rel="next"` } : {});
  }
}

type Outcome = { ok: true; stored: Set<string> } | { ok: false; code: string };

/** A run of `p`'s source, as the engine drives the job: every response checked, cursors remembered. */
async function run(p: Partner): Promise<Outcome> {
  const config = httpJobConfigSchema.parse(configOf(p));
  const http = {
    readResponse: (url: URL, opts: { body?: unknown }) => Promise.resolve(answer(p, url, opts.body)),
  } as unknown as HttpClient;
  const stored = new Set<string>();
  const seen = new Set<string>();
  let cursor: string | null = null;
  const what = 'partner p page';
  try {
    for (let pages = 0; pages < 500; pages++) {
      const ctx: FetchContext<HttpJobConfig> = {
        source: { id: 'p', name: 'p', baseUrl: BASE, timezone: 'UTC', pageSize: 200, config },
        businessDate: '2026-12-01',
        cursor,
        limit: p.limit,
        idempotencyKey: `k${pages}`,
        pagesFetched: pages,
        token: 'tok',
        secret: () => undefined,
        oauthToken: () => Promise.reject(new Error('no OAuth2 credential in this test')),
        signal: AbortSignal.timeout(5000),
        http,
        log: undefined as never,
      };
      const page = checkedPage(httpJob, await httpJob.fetchPage(ctx), MAX_RECORDS_PER_RESPONSE, what);
      for (const record of page.records) stored.add(idOf(httpJob, record, what));
      const next = page.nextCursor;
      if (next === null) return { ok: true, stored };
      // The engine's refusals of fetch-page.ts: no progress, or a position the run reached before.
      if (page.records.length === 0) return { ok: false, code: 'EMPTY_PAGE_WITH_CURSOR' };
      if (next === cursor || seen.has(next)) return { ok: false, code: 'CURSOR_LOOP' };
      seen.add(next);
      cursor = next;
    }
    return { ok: false, code: 'TOO_MANY_PAGES' };
  } catch (err) {
    const code = (err as { details?: { code?: string }[] }).details?.[0]?.code;
    assert.ok(code !== undefined, `a typed failure, not ${String(err)}`);
    return { ok: false, code };
  }
}

const partners = fc
  .record<Partner>({
    style: fc.constantFrom(...STYLES),
    count: fc.integer({ min: 0, max: 70 }),
    sizing: fc.oneof(
      fc.record({ kind: fc.constant('asked' as const), max: fc.integer({ min: 1, max: 30 }) }),
      fc.record({ kind: fc.constant('fixed' as const), size: fc.integer({ min: 1, max: 40 }) }),
    ),
    trailingEmpty: fc.boolean(),
    totalLie: fc.oneof(
      { arbitrary: fc.constant(0), weight: 3 },
      { arbitrary: fc.integer({ min: -5, max: 5 }), weight: 1 },
    ),
    emptyPageEnds: fc.boolean(),
    limit: fc.integer({ min: 1, max: 30 }),
    mistake: fc.boolean(),
  })
  .map((p) => (p.style === 'offset' || p.style === 'page' ? { ...p, totalLie: Math.abs(p.totalLie) } : p))
  .map((p) => (p.sizing.kind === 'asked' ? p : { ...p, mistake: false }))
  // A misread path and a lying total together can agree on a wrong end (OData: no next link read,
  // and a total of 2 for the 2 records read of 4): the partner's answers then look exactly like an
  // honest partner's last page, and no client can tell. Each is generated alone, so each is caught
  // by the other half telling the truth. (Seed 1840161236 drew that pair.)
  .map((p) => (p.mistake ? { ...p, totalLie: 0 } : p));

const STATES_TOTAL: ReadonlySet<Style> = new Set(['odata', 'offset', 'page']);

describe('http job: no silent loss (property)', () => {
  test('a run either fails or stores every record the partner holds; a total that lies always fails it', async () => {
    let succeeded = 0;
    await fc.assert(
      fc.asyncProperty(partners, async (p) => {
        const outcome = await run(p);
        const all = Array.from({ length: p.count }, (_, i) => idAt(i));
        if (!outcome.ok) return;
        succeeded += 1;
        assert.deepEqual([...outcome.stored].sort(), all.sort(), 'every record the partner holds, once');
        if (STATES_TOTAL.has(p.style) && p.totalLie !== 0) {
          // A page count that rounds to the truth (one page for none) is no lie about what a run reads.
          // Page numbers ask for the partner's page size (the config's limit), not the engine's.
          const size = served(p, p.sizing.kind === 'asked' ? p.sizing.max : p.sizing.size);
          const same = Math.ceil((p.count + p.totalLie) / size) <= Math.max(1, Math.ceil(p.count / size));
          assert.ok(p.style === 'page' && same, `a stated total that lies (${p.totalLie}) fails the run`);
        }
      }),
      { numRuns: 1500 },
    );
    assert.ok(succeeded > 500, `most generated partners are honest and read whole (${succeeded})`);
  });
});
