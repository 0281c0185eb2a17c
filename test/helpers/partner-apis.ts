/**
 * Declarative (`http` job) sources for the demo partner's imitations of twelve widely used list
 * APIs (partner/apis/): each API read with configuration only, its paging ending the way its
 * documentation says, its errors read as what they mean. What the conformance suite runs, and the
 * worked examples docs/http-sources.md shows. A source's base URL is the imitation's,
 * `<partner>/apis/<name>`, where the real one would be `https://api.stripe.com` and so on.
 */
import type { Prisma } from '../../prisma/generated/client.ts';
import type { ApiName, PartnerApis } from '../../partner/apis/index.ts';
import { SLACK_CHANNEL } from '../../partner/apis/slack.ts';
import { X_USER } from '../../partner/apis/x.ts';

/** The `DF_SECRET_*` reference each API's credential is kept under. */
export const API_SECRET_REFS: Readonly<Record<ApiName, string>> = {
  graph: 'DF_SECRET_MS_GRAPH',
  stripe: 'DF_SECRET_STRIPE',
  notion: 'DF_SECRET_NOTION',
  slack: 'DF_SECRET_SLACK',
  'github-graphql': 'DF_SECRET_GITHUB',
  'github-rest': 'DF_SECRET_GITHUB_REST',
  salesforce: 'DF_SECRET_SALESFORCE',
  hubspot: 'DF_SECRET_HUBSPOT',
  zendesk: 'DF_SECRET_ZENDESK',
  jira: 'DF_SECRET_JIRA',
  shopify: 'DF_SECRET_SHOPIFY',
  x: 'DF_SECRET_X',
};

/** The environment a worker or the CLI needs to read every API: each reference and its secret. */
export function apiSecrets(tokens: PartnerApis['tokens']): Record<string, string> {
  return Object.fromEntries(
    Object.entries(API_SECRET_REFS).map(([api, ref]) => [ref, tokens[api as ApiName]]),
  );
}

/** The base URL of an API's imitation on a partner. */
export function apiBaseUrl(partnerUrl: string, api: ApiName): string {
  return `${partnerUrl}/apis/${api}`;
}

const GITHUB_ISSUES = `query($owner: String!, $name: String!, $labels: [String!], $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    issues(first: $first, after: $after, labels: $labels) {
      totalCount
      nodes { id number title createdAt }
      pageInfo { endCursor hasNextPage }
    }
  }
}`;

const SHOPIFY_PRODUCTS = `query($first: Int!, $after: String, $query: String) {
  products(first: $first, after: $after, query: $query) {
    edges { cursor node { id title createdAt } }
    pageInfo { hasNextPage endCursor }
  }
}`;

/**
 * The config of a source reading `api`, with configuration only. Each states how its paging ends
 * (a link or cursor left out, null or empty; a stop flag; a total) and what its errors mean.
 */
export const API_CONFIGS: Readonly<Record<ApiName, Record<string, unknown>>> = {
  // OData: the next link's key holds dots, so the path says it in brackets; it is left out at the
  // end; `@odata.count` is the total the run must reach; pages may be larger than `$top`.
  graph: {
    request: {
      path: '/v1.0/users/ledger@contoso.example/messages',
      query: {
        $filter: 'receivedDateTime ge {dayStart} and receivedDateTime lt {dayEnd}',
        $count: 'true',
        $select: 'id,subject,receivedDateTime,from',
      },
    },
    auth: { type: 'bearer' },
    records: { path: 'value' },
    pagination: {
      type: 'next_url',
      path: "['@odata.nextLink']",
      endWhen: ['absent'],
      totalPath: "['@odata.count']",
      limitParam: '$top',
      limit: 100,
    },
  },
  // Keyset paging: the cursor is the last record's id, `has_more` says when to stop.
  stripe: {
    request: {
      path: '/v1/customers',
      query: { 'created[gte]': '{dayStartEpoch}', 'created[lt]': '{dayEndEpoch}' },
    },
    auth: { type: 'bearer' },
    records: { path: 'data' },
    pagination: {
      type: 'cursor',
      path: 'data[-1].id',
      param: 'starting_after',
      hasMorePath: 'has_more',
      limitParam: 'limit',
      limit: 100,
    },
  },
  // A POST search: the cursor goes in the body, and is left out of it before there is one (Notion
  // refuses `"start_cursor": null`).
  notion: {
    request: {
      method: 'POST',
      path: '/v1/search',
      headers: { 'Notion-Version': '2022-06-28' },
      body: {
        query: '{date}',
        filter: { property: 'object', value: 'page' },
        page_size: '{limit}',
        start_cursor: '{cursor}',
      },
    },
    auth: { type: 'bearer' },
    records: { path: 'results' },
    pagination: { type: 'cursor', path: 'next_cursor', param: null, hasMorePath: 'has_more', limit: 100 },
  },
  // Every answer is a 200 with `ok`; `ok: false` is the error it names (built in). The cursor is an
  // empty string at the end; pages may be shorter than `limit` before the end.
  slack: {
    request: {
      path: '/api/conversations.history',
      query: { channel: SLACK_CHANNEL, oldest: '{dayStartEpoch}', latest: '{dayEndEpoch}' },
    },
    auth: { type: 'bearer' },
    records: { path: 'messages', id: 'ts' },
    pagination: {
      type: 'cursor',
      path: 'response_metadata.next_cursor',
      param: 'cursor',
      endWhen: ['empty'],
      limitParam: 'limit',
      limit: 200,
    },
  },
  // A GraphQL connection: `query` plus `variables`, the cursor left out of them on the first page;
  // the errors GitHub puts inside a 200 are read as what they are (RATE_LIMITED is built in; this
  // rule adds the wait GitHub gives in its reset header).
  'github-graphql': {
    request: {
      method: 'POST',
      path: '/graphql',
      body: {
        query: GITHUB_ISSUES,
        variables: { owner: 'acme', name: 'ledger', labels: ['{date}'], first: '{limit}', after: '{cursor}' },
      },
    },
    auth: { type: 'bearer' },
    records: { path: 'data.repository.issues.nodes' },
    pagination: {
      type: 'cursor',
      path: 'data.repository.issues.pageInfo.endCursor',
      param: null,
      hasMorePath: 'data.repository.issues.pageInfo.hasNextPage',
      totalPath: 'data.repository.issues.totalCount',
      limit: 100,
    },
    responses: [
      {
        when: { status: [200], header: { name: 'x-ratelimit-remaining', equals: '0' } },
        then: 'rate_limited',
        waitHeader: 'x-ratelimit-reset',
        waitUnit: 'epoch',
      },
    ],
  },
  // The body is the array, the next page is in the Link header; GitHub's out-of-quota 403 is built
  // in. The old name of the repository answers 301, followed on the same origin.
  'github-rest': {
    request: {
      path: '/repos/acme/old-ledger/issues',
      query: { labels: '{date}', state: 'all' },
      headers: { Accept: 'application/vnd.github+json', 'X-GitHub-Api-Version': '2022-11-28' },
    },
    auth: { type: 'bearer' },
    pagination: { type: 'link_header', limitParam: 'per_page', limit: 100 },
    redirects: { follow: 'same_origin', maxHops: 2 },
  },
  // `done` ends the query; `nextRecordsUrl` is relative and left out at the end; batches come as
  // large as Salesforce likes, whatever the hint; the org's daily limit is no wait, but the end.
  salesforce: {
    request: {
      path: '/services/data/v60.0/query',
      query: { q: 'SELECT Id, Name, CreatedDate FROM Account WHERE DAY_ONLY(CreatedDate) = {date}' },
      headers: { 'Sforce-Query-Options': 'batchSize=200' },
    },
    auth: { type: 'bearer' },
    records: { path: 'records', id: 'Id' },
    pagination: {
      type: 'next_url',
      path: 'nextRecordsUrl',
      endWhen: ['absent'],
      donePath: 'done',
      totalPath: 'totalSize',
    },
    responses: [
      {
        when: { status: [403], body: { path: '[0].errorCode', equals: 'REQUEST_LIMIT_EXCEEDED' } },
        then: 'permission_denied',
        messagePath: '[0].message',
      },
    ],
  },
  // The whole `paging` object is left out on the last page; the burst limit is a 429 without
  // Retry-After, its window in HubSpot's own header.
  hubspot: {
    request: { path: '/crm/v3/objects/contacts', query: { archived: 'false' } },
    auth: { type: 'bearer' },
    records: { path: 'results' },
    pagination: {
      type: 'cursor',
      path: 'paging.next.after',
      param: 'after',
      endWhen: ['absent'],
      limitParam: 'limit',
      limit: 100,
    },
    responses: [
      {
        when: { status: [429], header: { name: 'X-HubSpot-RateLimit-Remaining', equals: '0' } },
        then: 'rate_limited',
        waitHeader: 'X-HubSpot-RateLimit-Interval-Milliseconds',
        waitUnit: 'milliseconds',
      },
    ],
  },
  // Bracketed parameter names; `meta.has_more` is the end, whatever the cursor says.
  zendesk: {
    request: { path: '/api/v2/tickets.json' },
    auth: { type: 'basic', username: 'agent@acme.example/token' },
    records: { path: 'tickets' },
    pagination: {
      type: 'cursor',
      path: 'meta.after_cursor',
      param: 'page[after]',
      hasMorePath: 'meta.has_more',
      limitParam: 'page[size]',
      limit: 100,
    },
  },
  // Offset paging whose page size the server caps below what was asked: `total` decides the end,
  // never a short page.
  jira: {
    request: {
      path: '/rest/api/3/search',
      query: {
        jql: 'project = LED AND labels = "ledger-{date}" ORDER BY key ASC',
        fields: 'summary,created',
      },
    },
    auth: { type: 'basic', username: 'agent@acme.example' },
    records: { path: 'issues' },
    pagination: {
      type: 'offset',
      param: 'startAt',
      limitParam: 'maxResults',
      limit: 100,
      totalPath: 'total',
    },
  },
  // GraphQL edges: each record is the element's `node`; a THROTTLED cost inside a 200 is a rate
  // limit (built in), waited out for as long as its cost extension says.
  shopify: {
    request: {
      method: 'POST',
      path: '/admin/api/2024-10/graphql.json',
      body: {
        query: SHOPIFY_PRODUCTS,
        variables: {
          first: '{limit}',
          after: '{cursor}',
          query: "created_at:>='{dayStart}' created_at:<'{dayEnd}'",
        },
      },
    },
    auth: { type: 'api_key', in: 'header', name: 'X-Shopify-Access-Token' },
    records: { path: 'data.products.edges', item: 'node' },
    pagination: {
      type: 'cursor',
      path: 'data.products.pageInfo.endCursor',
      param: null,
      hasMorePath: 'data.products.pageInfo.hasNextPage',
      limit: 250,
    },
  },
  // The next token is left out at the end; an empty page has no `data` at all, so it is read as an
  // empty last page by a rule; X's rate-limit headers are not GitHub's, so a rule reads them.
  x: {
    request: {
      path: `/2/users/${X_USER}/tweets`,
      query: { start_time: '{dayStart}', end_time: '{dayEnd}', 'tweet.fields': 'created_at' },
    },
    auth: { type: 'bearer' },
    records: { path: 'data' },
    pagination: {
      type: 'cursor',
      path: 'meta.next_token',
      param: 'pagination_token',
      endWhen: ['absent'],
      limitParam: 'max_results',
      limit: 100,
    },
    responses: [
      { when: { status: [200], body: { path: 'meta.result_count', equals: 0 } }, then: 'ignore' },
      { when: { status: [429] }, then: 'rate_limited', waitHeader: 'x-rate-limit-reset', waitUnit: 'epoch' },
    ],
  },
};

/** The config of a source reading `api`, with `extra` top-level keys replaced. */
export function apiConfig(api: ApiName, extra: Record<string, unknown> = {}): Prisma.InputJsonObject {
  return { ...API_CONFIGS[api], ...extra } as Prisma.InputJsonObject;
}
