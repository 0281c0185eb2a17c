// The imitated list APIs of widely used services, served by the demo partner under
// `/apis/<name>/…`, each with its real counterpart's shape, auth and hostile habits, so the
// declarative `http` job can be tried against them with configuration only. Their admin API
// (`/_admin/apis…`) lists what each holds, the requests each answered, and switches habits on.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, readJsonBody, sendJson } from '../http-io.ts';
import type { Ledger } from '../ledger.ts';
import { defaultRecordCount, isValidDate } from '../records.ts';
import { githubGraphqlApi } from './github-graphql.ts';
import { githubRestApi } from './github-rest.ts';
import { graphApi } from './graph.ts';
import { HabitBook, InvalidHabitError } from './habits.ts';
import { hubspotApi } from './hubspot.ts';
import { jiraApi } from './jira.ts';
import {
  ACCOUNT_SCOPE,
  API_NAMES,
  type ApiCall,
  type ApiDefinition,
  type ApiName,
  APIS_PREFIX,
  collection,
} from './kit.ts';
import { notionApi } from './notion.ts';
import { ApiRequestLog, type ApiRequestFilter } from './requests.ts';
import { salesforceApi } from './salesforce.ts';
import { shopifyApi } from './shopify.ts';
import { slackApi } from './slack.ts';
import { stripeApi } from './stripe.ts';
import { xApi } from './x.ts';
import { zendeskApi } from './zendesk.ts';

export { ACCOUNT_SCOPE, API_NAMES, type ApiName, APIS_PREFIX } from './kit.ts';
export type { HabitSpec } from './habits.ts';
export type { ApiRequest, ApiRequestFilter } from './requests.ts';

/** Every imitated API, by name. */
export const API_DEFINITIONS: Readonly<Record<ApiName, ApiDefinition>> = {
  graph: graphApi,
  stripe: stripeApi,
  notion: notionApi,
  slack: slackApi,
  'github-graphql': githubGraphqlApi,
  'github-rest': githubRestApi,
  salesforce: salesforceApi,
  hubspot: hubspotApi,
  zendesk: zendeskApi,
  jira: jiraApi,
  shopify: shopifyApi,
  x: xApi,
};

/** Each API's secret unless the partner's options name another (all fake, for tests only). */
export const DEFAULT_API_TOKENS: Readonly<Record<ApiName, string>> = {
  graph: 'demo-graph-token',
  stripe: 'sk_test_demo51H8kq2eZvKYlo2C0',
  notion: 'secret_demoNotionToken1',
  slack: 'xoxb-0000-demo-slack-token',
  'github-graphql': 'ghp_demoGithubGraphqlToken',
  'github-rest': 'ghp_demoGithubRestToken',
  salesforce: '00Ddemo!AQ4AQSalesforceToken',
  hubspot: 'pat-na1-demo-hubspot-token',
  zendesk: 'demoZendeskApiToken',
  jira: 'ATATTdemoJiraApiToken',
  shopify: 'shpat_demoShopifyToken',
  x: 'AAAAAAAAAAAAAAAAAAAAAdemoXToken',
};

/** How the partner sets its imitated APIs up. */
export interface ApisOptions {
  /**
   * Records an API holds for a scope: a business date `YYYY-MM-DD`, or `account` for the lists
   * with no date filter (HubSpot, Zendesk). Default: deterministic from a hash, 150..400.
   */
  recordCount?: (api: ApiName, scope: string) => number;
  /** Secrets other than `DEFAULT_API_TOKENS`, by API. */
  tokens?: Partial<Record<ApiName, string>>;
}

/** The imitated APIs' state: what a test reads and switches (the admin API drives the same). */
export interface PartnerApis {
  /** Hostile habits switched on. */
  habits: HabitBook;
  /** Every request the APIs answered. */
  requests: ApiRequestLog;
  /** Each API's secret. */
  tokens: Readonly<Record<ApiName, string>>;
  /**
   * The partner's own list of what an API holds for a scope (a date; ignored for the undated
   * lists), as the ids a source reads (`records.id`), in the API's list order.
   */
  ids(api: ApiName, scope: string): string[];
  /** Records an API holds for a scope. */
  count(api: ApiName, scope: string): number;
}

/** The scope an API's records of `date` live in. */
function scopeOf(api: ApiName, date: string): string {
  return API_DEFINITIONS[api].undated ? ACCOUNT_SCOPE : date;
}

/** Sets the imitated APIs up. Throws `RangeError` for a token with whitespace. */
export function createApis(options: ApisOptions = {}): PartnerApis {
  const tokens = { ...DEFAULT_API_TOKENS, ...options.tokens };
  for (const [api, token] of Object.entries(tokens)) {
    if (!/^\S+$/.test(token))
      throw new RangeError(`apiTokens.${api} must be a non-empty string without whitespace`);
  }
  const counted = options.recordCount ?? ((api, scope) => defaultRecordCount(`api-${api}`, scope));
  const count = (api: ApiName, scope: string) => Math.max(0, Math.floor(counted(api, scope)));
  const names = Object.fromEntries(API_NAMES.map((n) => [n, Object.keys(API_DEFINITIONS[n].habits)]));
  return {
    habits: new HabitBook(names as Record<ApiName, string[]>),
    requests: new ApiRequestLog(),
    tokens,
    count,
    ids(api, date) {
      const def = API_DEFINITIONS[api];
      const scope = scopeOf(api, date);
      return collection(def, scope, count(api, scope)).map((item) => def.idOf(item));
    },
  };
}

/** A Host header fit to build a link from (anything else falls back to the socket's address). */
const HOST = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;

function originOf(req: IncomingMessage): string {
  const host = req.headers.host;
  if (host !== undefined && HOST.test(host)) return `http://${host}`;
  const address = req.socket.localAddress ?? '127.0.0.1';
  return `http://${address.includes(':') ? `[${address}]` : address}:${req.socket.localPort}`;
}

/** Whether a path is an imitated API's. */
export function isApiPath(pathname: string): boolean {
  return pathname.startsWith(APIS_PREFIX);
}

/**
 * Serves `/apis/<name>/…` by the API `name` imitates (see each one's header), answering every
 * refusal in that API's own words. Side effects: consumes the habits that shaped the answer;
 * appends one entry to the APIs' request log and one to the partner's ledger per request.
 * Throws `HttpError` 404 for an unknown API, for the caller to answer.
 */
export async function handleApi(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  apis: PartnerApis,
  ledger: Ledger,
): Promise<void> {
  const rest = url.pathname.slice(APIS_PREFIX.length);
  const name = API_NAMES.find((n) => rest === n || rest.startsWith(`${n}/`));
  if (name === undefined) throw new HttpError(404, 'not_found', `no imitated API at ${url.pathname}`);
  const def = API_DEFINITIONS[name];
  const path = rest.slice(name.length) || '/';
  const method = req.method ?? 'GET';
  let body: unknown;
  let bodyError: string | undefined;
  if (method === 'POST') {
    try {
      body = await readJsonBody(req);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      bodyError = error.message;
    }
  }
  const call: ApiCall = {
    method,
    path,
    query: url.searchParams,
    headers: req.headers,
    body,
    ...(bodyError === undefined ? {} : { bodyError }),
    base: `${originOf(req)}${APIS_PREFIX}${name}`,
    token: apis.tokens[name],
    count: (scope) => apis.count(name, scope),
    habit: (habit, scope) => apis.habits.take(name, habit, scope),
  };
  const answer = await def.serve(call);
  apis.requests.record({
    api: name,
    method,
    path,
    ...(answer.scope === undefined ? {} : { scope: answer.scope }),
    position: answer.position ?? null,
    status: answer.status,
    ...(answer.habit === undefined ? {} : { habit: answer.habit }),
    ...(answer.records === undefined ? {} : { records: answer.records }),
    authorized: answer.authorized,
  });
  ledger.record({
    method,
    path: url.pathname,
    ...(answer.scope !== undefined && isValidDate(answer.scope) ? { date: answer.scope } : {}),
    status: answer.status,
    auth: req.headers.authorization !== undefined,
    authorized: answer.authorized,
    ...(answer.habit === undefined ? {} : { fault: answer.habit }),
  });
  if (!res.destroyed) sendJson(res, answer.status, answer.body, answer.headers);
}

/** Prefix of the imitated APIs' admin routes. */
export const APIS_ADMIN_PREFIX = '/_admin/apis';

function requestFilter(query: URLSearchParams): ApiRequestFilter {
  const filter: ApiRequestFilter = {};
  const api = query.get('api');
  if (api !== null) {
    const known = API_NAMES.find((n) => n === api);
    if (known === undefined)
      throw new HttpError(400, 'invalid_filter', `"api" must be one of ${API_NAMES.join(', ')}`);
    filter.api = known;
  }
  const scope = query.get('scope');
  if (scope) filter.scope = scope;
  const status = query.get('status');
  if (status) filter.status = Number(status);
  return filter;
}

/**
 * Serves the imitated APIs' admin routes (never logged, never shaped by a habit):
 * - `GET /_admin/apis` → `{ apis: [{ name, title, base, undated, habits }] }`;
 * - `GET /_admin/apis/<name>/ids?date=` → `{ ids }`: the partner's own list of what the API holds
 *   for that date (the undated lists ignore it), in list order;
 * - `GET|DELETE /_admin/apis/requests[?api=&scope=&status=]` → `{ requests }` / `{ cleared }`;
 * - `GET|POST|DELETE /_admin/apis/habits` → `{ habits }` / `{ id }` (201) / `{ cleared }`.
 * Throws `HttpError` (400 a bad date, filter or habit; 404; 405) for the caller to answer.
 */
export async function handleApisAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  apis: PartnerApis,
): Promise<void> {
  const method = req.method ?? 'GET';
  const allow = (methods: string[]) => {
    if (!methods.includes(method))
      throw new HttpError(405, 'method_not_allowed', `use ${methods.join(' or ')}`);
  };
  const rest = url.pathname.slice(APIS_ADMIN_PREFIX.length);
  if (rest === '' || rest === '/') {
    allow(['GET']);
    const list = API_NAMES.map((name) => {
      const def = API_DEFINITIONS[name];
      return {
        name,
        title: def.title,
        base: `${APIS_PREFIX}${name}`,
        undated: def.undated ?? false,
        habits: def.habits,
      };
    });
    return sendJson(res, 200, { apis: list });
  }
  if (rest === '/requests') {
    allow(['GET', 'DELETE']);
    if (method === 'DELETE') return sendJson(res, 200, { cleared: apis.requests.clear() });
    return sendJson(res, 200, { requests: apis.requests.entries(requestFilter(url.searchParams)) });
  }
  if (rest === '/habits') {
    allow(['GET', 'POST', 'DELETE']);
    if (method === 'GET') return sendJson(res, 200, { habits: apis.habits.list() });
    if (method === 'DELETE') return sendJson(res, 200, { cleared: apis.habits.clear() });
    try {
      return sendJson(res, 201, { id: apis.habits.add(await readJsonBody(req)) });
    } catch (error) {
      if (error instanceof InvalidHabitError) throw new HttpError(400, 'invalid_habit', error.message);
      throw error;
    }
  }
  const ids = /^\/([a-z-]+)\/ids$/.exec(rest);
  const name = API_NAMES.find((n) => n === ids?.[1]);
  if (name === undefined) throw new HttpError(404, 'not_found', `no admin route ${url.pathname}`);
  allow(['GET']);
  const date = url.searchParams.get('date') ?? '';
  if (!API_DEFINITIONS[name].undated && !isValidDate(date)) {
    throw new HttpError(400, 'invalid_date', '"date" must be a calendar date written YYYY-MM-DD');
  }
  return sendJson(res, 200, { ids: apis.ids(name, date) });
}
