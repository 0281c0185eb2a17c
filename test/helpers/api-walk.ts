/**
 * A hand-written client of each imitated list API (partner/apis/), following each one's paging the
 * way its documentation tells a client to, so a test can walk an API to its end over real HTTP
 * and compare what it got with the partner's own list.
 */
import type { ApiName, PartnerApis } from '../../partner/apis/index.ts';
import { SLACK_CHANNEL } from '../../partner/apis/slack.ts';
import { X_USER } from '../../partner/apis/x.ts';

/** One request of a walk. */
export interface ApiRequestSpec {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: unknown;
}

/** One answer of a walk, its JSON body parsed. */
export interface ApiResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

/** How to walk one API: its first request, the next one after an answer, and its records. */
export interface Walker {
  first(date: string, size: number): ApiRequestSpec;
  /** The next request, or null when the documented end signal says the list ended. */
  next(res: ApiResponse, req: ApiRequestSpec): ApiRequestSpec | null;
  /** The records of an answer. */
  items(body: unknown): unknown[];
  /** The id a source reads from a record. */
  id(item: unknown): string;
}

type Json = Record<string, unknown>;
const obj = (v: unknown) => (v ?? {}) as Json;
const dayStart = (date: string) => `${date}T00:00:00.000Z`;
const dayEnd = (date: string) => new Date(Date.parse(dayStart(date)) + 86_400_000).toISOString();
const epoch = (iso: string) => Math.floor(Date.parse(iso) / 1000);
const basic = (pair: string) => `Basic ${Buffer.from(pair).toString('base64')}`;

/** The `rel` → URL map of a `Link` header. */
function links(header: string | null): Record<string, string> {
  const found: Record<string, string> = {};
  for (const [, url, rel] of (header ?? '').matchAll(/<([^>]*)>;\s*rel="([^"]+)"/g)) {
    if (url !== undefined && rel !== undefined) found[rel] = url;
  }
  return found;
}

const GITHUB_QUERY =
  'query($owner: String!, $name: String!, $labels: [String!], $first: Int!, $after: String) { repository(owner: $owner, name: $name) { issues(first: $first, after: $after, labels: $labels) { nodes { id number title } pageInfo { endCursor hasNextPage } } } }';
const SHOPIFY_QUERY =
  'query($first: Int!, $after: String, $query: String) { products(first: $first, after: $after, query: $query) { edges { cursor node { id title createdAt } } pageInfo { hasNextPage endCursor } } }';

/** A walker for every imitated API; `base` is the partner's URL, `tokens` the APIs' secrets. */
export function walkers(base: string, tokens: PartnerApis['tokens']): Record<ApiName, Walker> {
  const at = (api: ApiName, path: string, query: Record<string, string | number> = {}) => {
    const url = new URL(`${base}/apis/${api}${path}`);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, String(value));
    return url.href;
  };
  const bearer = (api: ApiName) => ({ authorization: `Bearer ${tokens[api]}` });
  return {
    graph: {
      first: (date, size) => ({
        url: at('graph', '/v1.0/users/me/messages', {
          $filter: `receivedDateTime ge ${dayStart(date)} and receivedDateTime lt ${dayEnd(date)}`,
          $top: size,
          $count: 'true',
        }),
        headers: bearer('graph'),
      }),
      next: (res, req) => {
        const link = obj(res.body)['@odata.nextLink'];
        return typeof link === 'string' ? { ...req, url: link } : null;
      },
      items: (body) => obj(body).value as unknown[],
      id: (item) => String(obj(item).id),
    },
    stripe: {
      first: (date, size) => ({
        url: at('stripe', '/v1/customers', {
          'created[gte]': epoch(dayStart(date)),
          'created[lt]': epoch(dayEnd(date)),
          limit: size,
        }),
        headers: bearer('stripe'),
      }),
      next: (res, req) => {
        const { has_more: more, data } = obj(res.body) as { has_more: boolean; data: Json[] };
        if (!more) return null;
        const url = new URL(req.url);
        url.searchParams.set('starting_after', String(data[data.length - 1]?.id));
        return { ...req, url: url.href };
      },
      items: (body) => obj(body).data as unknown[],
      id: (item) => String(obj(item).id),
    },
    notion: {
      first: (date, size) => ({
        url: at('notion', '/v1/search'),
        method: 'POST',
        headers: { ...bearer('notion'), 'notion-version': '2022-06-28' },
        body: { query: date, filter: { property: 'object', value: 'page' }, page_size: size },
      }),
      next: (res, req) => {
        const { has_more: more, next_cursor: cursor } = obj(res.body);
        return more === true ? { ...req, body: { ...obj(req.body), start_cursor: cursor } } : null;
      },
      items: (body) => obj(body).results as unknown[],
      id: (item) => String(obj(item).id),
    },
    slack: {
      first: (date, size) => ({
        url: at('slack', '/api/conversations.history', {
          channel: SLACK_CHANNEL,
          oldest: epoch(dayStart(date)),
          latest: epoch(dayEnd(date)),
          limit: size,
        }),
        headers: bearer('slack'),
      }),
      next: (res, req) => {
        const cursor = obj(obj(res.body).response_metadata).next_cursor;
        if (obj(res.body).ok !== true || cursor === '') return null;
        const url = new URL(req.url);
        url.searchParams.set('cursor', String(cursor));
        return { ...req, url: url.href };
      },
      items: (body) => (obj(body).messages as unknown[] | undefined) ?? [],
      id: (item) => String(obj(item).ts),
    },
    'github-graphql': {
      first: (date, size) => ({
        url: at('github-graphql', '/graphql'),
        method: 'POST',
        headers: bearer('github-graphql'),
        body: {
          query: GITHUB_QUERY,
          variables: { owner: 'acme', name: 'ledger', labels: [date], first: size },
        },
      }),
      next: (res, req) => {
        const info = obj(obj(obj(obj(obj(res.body).data).repository).issues).pageInfo);
        if (info.hasNextPage !== true) return null;
        const body = obj(req.body);
        return { ...req, body: { ...body, variables: { ...obj(body.variables), after: info.endCursor } } };
      },
      items: (body) => obj(obj(obj(obj(body).data).repository).issues).nodes as unknown[],
      id: (item) => String(obj(item).id),
    },
    'github-rest': {
      first: (date, size) => ({
        url: at('github-rest', '/repos/acme/ledger/issues', { labels: date, state: 'all', per_page: size }),
        headers: bearer('github-rest'),
      }),
      next: (res, req) => {
        const next = links(res.headers.get('link')).next;
        return next === undefined ? null : { ...req, url: next };
      },
      items: (body) => body as unknown[],
      id: (item) => String(obj(item).id),
    },
    salesforce: {
      first: (date) => ({
        url: at('salesforce', '/services/data/v60.0/query', {
          q: `SELECT Id, Name FROM Account WHERE DAY_ONLY(CreatedDate) = ${date}`,
        }),
        headers: bearer('salesforce'),
      }),
      next: (res, req) => {
        const { done, nextRecordsUrl } = obj(res.body);
        return done === true ? null : { ...req, url: new URL(String(nextRecordsUrl), req.url).href };
      },
      items: (body) => obj(body).records as unknown[],
      id: (item) => String(obj(item).Id),
    },
    hubspot: {
      first: (_date, size) => ({
        url: at('hubspot', '/crm/v3/objects/contacts', { limit: size }),
        headers: bearer('hubspot'),
      }),
      next: (res, req) => {
        const paging = obj(res.body).paging;
        if (paging === undefined) return null;
        const url = new URL(req.url);
        url.searchParams.set('after', String(obj(obj(paging).next).after));
        return { ...req, url: url.href };
      },
      items: (body) => obj(body).results as unknown[],
      id: (item) => String(obj(item).id),
    },
    zendesk: {
      first: (_date, size) => ({
        url: at('zendesk', '/api/v2/tickets.json', { 'page[size]': size }),
        headers: { authorization: basic(`agent@acme.example/token:${tokens.zendesk}`) },
      }),
      next: (res, req) => {
        const { meta, links: pageLinks } = obj(res.body);
        return obj(meta).has_more === true ? { ...req, url: String(obj(pageLinks).next) } : null;
      },
      items: (body) => obj(body).tickets as unknown[],
      id: (item) => String(obj(item).id),
    },
    jira: {
      first: (date, size) => ({
        url: at('jira', '/rest/api/3/search', {
          jql: `project = LED AND labels = "ledger-${date}" ORDER BY key ASC`,
          startAt: 0,
          maxResults: size,
        }),
        headers: { authorization: basic(`agent@acme.example:${tokens.jira}`) },
      }),
      next: (res, req) => {
        const { startAt, total, issues } = obj(res.body) as {
          startAt: number;
          total: number;
          issues: unknown[];
        };
        const reached = startAt + issues.length;
        if (reached >= total || issues.length === 0) return null;
        const url = new URL(req.url);
        url.searchParams.set('startAt', String(reached));
        return { ...req, url: url.href };
      },
      items: (body) => obj(body).issues as unknown[],
      id: (item) => String(obj(item).id),
    },
    shopify: {
      first: (date, size) => ({
        url: at('shopify', '/admin/api/2024-10/graphql.json'),
        method: 'POST',
        headers: { 'x-shopify-access-token': tokens.shopify },
        body: {
          query: SHOPIFY_QUERY,
          variables: { first: size, query: `created_at:>='${dayStart(date)}' created_at:<'${dayEnd(date)}'` },
        },
      }),
      next: (res, req) => {
        const info = obj(obj(obj(obj(res.body).data).products).pageInfo);
        if (info.hasNextPage !== true) return null;
        const body = obj(req.body);
        return { ...req, body: { ...body, variables: { ...obj(body.variables), after: info.endCursor } } };
      },
      items: (body) => (obj(obj(obj(body).data).products).edges as Json[]).map((e) => e.node),
      id: (item) => String(obj(item).id),
    },
    x: {
      first: (date, size) => ({
        url: at('x', `/2/users/${X_USER}/tweets`, {
          start_time: dayStart(date),
          end_time: dayEnd(date),
          max_results: size,
        }),
        headers: bearer('x'),
      }),
      next: (res, req) => {
        const token = obj(obj(res.body).meta).next_token;
        if (typeof token !== 'string') return null;
        const url = new URL(req.url);
        url.searchParams.set('pagination_token', token);
        return { ...req, url: url.href };
      },
      items: (body) => (obj(body).data as unknown[] | undefined) ?? [],
      id: (item) => String(obj(item).id),
    },
  };
}

/** Sends one request of a walk (redirects are not followed: a 3xx is an answer). */
export async function send(req: ApiRequestSpec): Promise<ApiResponse> {
  const res = await fetch(req.url, {
    method: req.method ?? 'GET',
    redirect: 'manual',
    headers: { ...req.headers, ...(req.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

/** What a walk saw: every id in order, each page's answer, and whether it reached the end. */
export interface Walk {
  ids: string[];
  pages: ApiResponse[];
  ended: boolean;
}

/** Walks an API from its first request, page by page, until its end signal or `maxPages`. */
export async function walk(walker: Walker, date: string, size: number, maxPages = 50): Promise<Walk> {
  const result: Walk = { ids: [], pages: [], ended: false };
  let req: ApiRequestSpec | null = walker.first(date, size);
  while (req !== null && result.pages.length < maxPages) {
    const res = await send(req);
    result.pages.push(res);
    if (res.status !== 200) return result;
    result.ids.push(...walker.items(res.body).map((item) => walker.id(item)));
    req = walker.next(res, req);
    if (req === null) result.ended = true;
  }
  return result;
}
