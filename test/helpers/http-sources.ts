/**
 * Declarative (`http` job) sources for the demo partner's catalog, one per pagination style, each
 * behind one of the catalog's auth kinds: what the http-sources tests run, and a worked example of
 * each config shape (docs/jobs.md shows the same).
 */
import type { Prisma } from '../../prisma/generated/client.ts';
import type { CatalogStyle } from '../../partner/catalog.ts';

export const CATALOG_SECRET_REF = 'DF_SECRET_HTTP_CATALOG';
export const CATALOG_TOKEN = 'tok-catalog-9f3b27c1e0';

/** The most records a request asks the partner for: smaller than a stored page, so pages span several. */
const ASK = 25;

/** The config of a source reading the catalog in `style`. */
export function catalogConfig(
  style: CatalogStyle,
  extra: Record<string, unknown> = {},
): Prisma.InputJsonObject {
  const query = { date: '{date}' };
  const configs: Record<CatalogStyle, Record<string, unknown>> = {
    cursor: {
      request: { path: '/catalog/bearer/cursor/items', query },
      auth: { type: 'bearer' },
      records: { path: 'items' },
      pagination: {
        type: 'cursor',
        path: 'meta.next_cursor',
        param: 'cursor',
        limitParam: 'limit',
        limit: ASK,
      },
    },
    'next-url': {
      request: { path: '/catalog/api-key/next-url/items', query },
      auth: { type: 'api_key', in: 'header', name: 'X-Api-Key' },
      records: { path: 'results' },
      pagination: { type: 'next_url', path: 'links.next', limitParam: 'limit', limit: ASK },
    },
    'link-header': {
      request: { path: '/catalog/basic/link-header/items', query },
      auth: { type: 'basic', username: 'demo' },
      pagination: { type: 'link_header', limitParam: 'per_page', limit: ASK },
    },
    'page-number': {
      request: { path: '/catalog/api-key/page-number/items', query },
      auth: { type: 'api_key', in: 'query', name: 'api_key' },
      records: { path: 'data' },
      pagination: { type: 'page_number', limit: ASK, totalPagesPath: 'total_pages' },
    },
    offset: {
      request: { path: '/catalog/bearer/offset/items', query },
      records: { path: 'records' },
      pagination: { type: 'offset', limit: ASK, totalPath: 'total' },
    },
    none: {
      request: {
        path: '/catalog/bearer/none/items',
        query: { ...query, since: '{dayStartEpoch}', until: '{dayEndEpoch}' },
      },
      records: { path: 'items' },
    },
    search: {
      request: {
        method: 'POST',
        path: '/catalog/basic/search',
        body: { date: '{date}', limit: '{limit}', cursor: '{cursor}' },
      },
      auth: { type: 'basic', username: 'demo' },
      records: { path: 'hits' },
      pagination: { type: 'cursor', path: 'next', param: null, limit: ASK },
    },
  };
  return { ...configs[style], ...extra } as Prisma.InputJsonObject;
}

/** The credential form the catalog sees from each style's source (its ledger's `credential`). */
export const CREDENTIAL_OF: Record<CatalogStyle, string> = {
  cursor: 'bearer',
  'next-url': 'api_key_header',
  'link-header': 'basic',
  'page-number': 'api_key_query',
  offset: 'bearer',
  none: 'bearer',
  search: 'basic',
};

/** Every id of the catalog for `date`, as the partner itself lists them. */
export async function catalogIds(partnerUrl: string, date: string): Promise<string[]> {
  const res = await fetch(`${partnerUrl}/_admin/catalog?date=${date}`);
  const body = (await res.json()) as { ids: string[] };
  return body.ids;
}
