// A client of the demo partner's catalog, written the way a declarative HTTP job would follow each
// pagination style, so tests can walk a style to its end and compare with the partner's own list.
import assert from 'node:assert/strict';
import type { CatalogAuth } from '../../partner/auth.ts';
import type { CatalogStyle } from '../../partner/catalog.ts';
import type { PartnerRecord } from '../../partner/records.ts';
import { after, before, beforeEach } from 'node:test';
import { type PartnerOptions, type PartnerServer, startPartner } from '../../partner/server.ts';

/** The partner's default catalog token. */
export const CATALOG_TOKEN = 'demo-catalog-token';

/** The `Authorization` header of the default token on the `bearer` routes. */
export const BEARER = { authorization: `Bearer ${CATALOG_TOKEN}` };

/** The partner's own list of a date's catalog ids (`GET /_admin/catalog`). */
export async function adminIds(partner: PartnerServer, date: string): Promise<string[]> {
  const res = await fetch(`${partner.url}/_admin/catalog?date=${date}`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { ids: string[] }).ids;
}

/** `GET /catalog/<path>` with `headers` (the default bearer token), its JSON body parsed. */
export async function catalogGet(
  partner: PartnerServer,
  path: string,
  headers: Record<string, string> = BEARER,
) {
  const res = await fetch(`${partner.url}/catalog/${path}`, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/** How a walk presents its credential: the route's auth kind, and for `api-key` where the key goes. */
export interface Credential {
  auth: CatalogAuth;
  token?: string;
  apiKeyIn?: 'header' | 'query';
}

/** Adds the credential to a request: a header, or for an api key in the query, a parameter. */
export function authorize(url: URL, { auth, token = CATALOG_TOKEN, apiKeyIn }: Credential): Headers {
  const headers = new Headers();
  if (auth === 'bearer') headers.set('authorization', `Bearer ${token}`);
  if (auth === 'basic')
    headers.set('authorization', `Basic ${Buffer.from(`demo:${token}`).toString('base64')}`);
  if (auth === 'api-key' && apiKeyIn === 'query') url.searchParams.set('api_key', token);
  else if (auth === 'api-key') headers.set('x-api-key', token);
  return headers;
}

/** The `rel` → URL map of a `Link` header. */
export function parseLinks(header: string | null): Record<string, string> {
  const links: Record<string, string> = {};
  for (const [, url, rel] of (header ?? '').matchAll(/<([^>]*)>;\s*rel="([^"]+)"/g)) {
    if (url !== undefined && rel !== undefined) links[rel] = url;
  }
  return links;
}

/** One page as a walk saw it. */
export interface Step {
  /** The URL asked (absolute, credential included). */
  url: string;
  /** The paging value the request sent (see `FaultSpec.position`). */
  position: string | null;
  ids: string[];
}

/** A walk of one style: the pages asked, every id in the order served, and whether it ended. */
export interface Walk {
  steps: Step[];
  ids: string[];
  ended: boolean;
}

interface Options {
  date: string;
  credential?: Credential;
  /** Page size asked (absent: the partner's default). */
  size?: number;
  /** Stop after this many pages (a loop never ends); default 100. */
  maxPages?: number;
}

type Body = Record<string, unknown> & PartnerRecord[];

async function ask(
  url: URL,
  credential: Credential,
  search?: object,
): Promise<{ body: Body; res: Response }> {
  const headers = authorize(url, credential);
  const init = search ? { method: 'POST', headers, body: JSON.stringify(search) } : { headers };
  const res = await fetch(url, init);
  const text = await res.text();
  assert.equal(res.status, 200, `${url.toString()}: ${text}`);
  return { body: JSON.parse(text) as Body, res };
}

/**
 * Follows `style` from its first page to its end as its clients do: the cursor from the body,
 * the `next` link (relative to `base`), the `Link` header's rel="next", page or offset arithmetic
 * from the totals, or one unpaged request. Asserts every answer is a 200.
 */
export async function walkCatalog(base: string, style: CatalogStyle, options: Options): Promise<Walk> {
  const { date, credential = { auth: 'bearer' }, size, maxPages = 100 } = options;
  const sizeName = style === 'link-header' || style === 'page-number' ? 'per_page' : 'limit';
  const path = style === 'search' ? 'search' : `${style}/items`;
  const first = new URL(`/catalog/${credential.auth}/${path}`, base);
  if (style !== 'search') first.searchParams.set('date', date);
  if (size !== undefined && style !== 'search') first.searchParams.set(sizeName, String(size));
  const steps: Step[] = [];
  let url: URL | undefined = first;
  let position: string | null = null;
  while (url && steps.length < maxPages) {
    const search = style === 'search' ? { date, limit: size, cursor: position } : undefined;
    const { body, res } = await ask(url, credential, search);
    const items = (body.items ??
      body.results ??
      body.data ??
      body.records ??
      body.hits ??
      body) as PartnerRecord[];
    steps.push({ url: url.toString(), position, ids: items.map((r) => r.id) });
    const next = nextOf(style, url, body, res, items.length);
    url = next === undefined ? undefined : new URL(next.url, base);
    position = next?.position ?? null;
  }
  return { steps, ids: steps.flatMap((s) => s.ids), ended: url === undefined };
}

/** Where a style's client goes after a page, or undefined at the end. */
function nextOf(
  style: CatalogStyle,
  url: URL,
  body: Body,
  res: Response,
  count: number,
): { url: string; position: string } | undefined {
  const at = (name: string, value: string) => {
    const next = new URL(url);
    next.searchParams.delete('api_key');
    next.searchParams.set(name, value);
    return { url: next.toString(), position: value };
  };
  const linked = (link: string | null | undefined) => {
    if (!link) return undefined;
    const next = new URL(link, url);
    const name = style === 'next-url' ? 'page_token' : 'after';
    return { url: link, position: next.searchParams.get(name) ?? '' };
  };
  switch (style) {
    case 'cursor': {
      const cursor = (body.meta as { next_cursor: string | null }).next_cursor;
      return cursor === null ? undefined : at('cursor', cursor);
    }
    case 'next-url':
      return linked((body.links as { next: string | null }).next);
    case 'link-header':
      return linked(parseLinks(res.headers.get('link')).next);
    case 'page-number': {
      const { page, total_pages } = body as unknown as { page: number; total_pages: number };
      return page < total_pages && count > 0 ? at('page', String(page + 1)) : undefined;
    }
    case 'offset': {
      const offset = Number(url.searchParams.get('offset') ?? 0) + count;
      return offset < (body.total as number) && count > 0 ? at('offset', String(offset)) : undefined;
    }
    case 'search': {
      const next = body.next as string | null;
      return next === null ? undefined : { url: url.toString(), position: next };
    }
    case 'none':
      return undefined;
  }
}

/**
 * A demo partner for one test file (started before its tests, its faults and ledger cleared before
 * each, closed after): `partner()` is the running server.
 */
export function useCatalogPartner(options: PartnerOptions): () => PartnerServer {
  let partner: PartnerServer | undefined;
  before(async () => {
    partner = await startPartner({ port: 0, ...options });
  });
  beforeEach(() => {
    partner?.faults.clear();
    partner?.ledger.clear();
  });
  after(() => partner?.close());
  return () => {
    if (!partner) throw new Error('the catalog partner is not started yet');
    return partner;
  };
}
