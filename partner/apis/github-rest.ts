// GitHub REST API: `GET /repos/{owner}/{repo}/issues`, a repository's issues with one label. Facts
// from GitHub's REST documentation ("Using pagination in the REST API", "Rate limits for the REST
// API", "Best practices: follow redirects", "List repository issues"), each a habit here:
// - the body is the array itself; the next page is in the `Link` header (`rel="next"`, absolute
//   URL; also `first`, `prev`, `last`), absent on the last page;
// - `per_page` is at most 100 (a larger value is served as 100), default 30; `page` is 1-based;
// - over the primary rate limit: 403 (or 429) with `x-ratelimit-remaining: 0` and
//   `x-ratelimit-reset`, the epoch second the limit resets at (habit `rate_limited`);
// - a renamed repository answers its old path with 301 Moved Permanently to the new one
//   (`/repositories/{id}/…`, same host), which a client should follow;
// - a wrong token is 401 `{ "message": "Bad credentials" }`.
// The imitation holds `acme/ledger` (id 4242, also served at `/repositories/4242/issues`); its old
// name `acme/old-ledger` always redirects. Label `<date>` marks that day's issues.
import { secretEquals } from '../auth.ts';
import { isValidDate } from '../records.ts';
import {
  answer,
  type ApiAnswer,
  type ApiCall,
  type ApiDefinition,
  BASE62,
  bearerOf,
  charsOf,
  collection,
  createdAt,
  epochIn,
  intParam,
  waitOf,
} from './kit.ts';

interface Issue {
  id: number;
  node_id: string;
  number: number;
  title: string;
  state: 'open';
  labels: { name: string }[];
  created_at: string;
}

const PATHS = ['/repos/acme/ledger/issues', '/repositories/4242/issues'];
const OLD_PATH = '/repos/acme/old-ledger/issues';
const DEFAULT_PER_PAGE = 30;
const MAX_PER_PAGE = 100;
const DOCS = 'https://docs.github.com/rest';

/** GitHub's rate-limit headers, on every answer of its REST (`core`) and GraphQL (`graphql`) APIs. */
export function githubRateHeaders(
  resource: 'core' | 'graphql',
  remaining: number,
  resetS = 3600,
): Record<string, string> {
  return {
    'x-ratelimit-limit': '5000',
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-used': String(5000 - remaining),
    'x-ratelimit-reset': String(epochIn(resetS)),
    'x-ratelimit-resource': resource,
  };
}

const rateHeaders = (remaining: number, resetS?: number) => githubRateHeaders('core', remaining, resetS);

/** The `Link` header of page `page` of `pages` (none when there is only one page). */
function linkHeader(
  base: string,
  path: string,
  query: URLSearchParams,
  page: number,
  pages: number,
): string | undefined {
  const at = (n: number) => {
    const url = new URL(`${base}${path}`);
    for (const [name, value] of query) if (name !== 'page') url.searchParams.set(name, value);
    url.searchParams.set('page', String(n));
    return url.href;
  };
  const links: string[] = [];
  if (page > 1) links.push(`<${at(page - 1)}>; rel="prev"`);
  if (page < pages) links.push(`<${at(page + 1)}>; rel="next"`, `<${at(pages)}>; rel="last"`);
  if (page > 1) links.push(`<${at(1)}>; rel="first"`);
  return links.length > 0 ? links.join(', ') : undefined;
}

function serve(call: ApiCall): ApiAnswer {
  const token = bearerOf(call.headers);
  if (token === undefined || !secretEquals(token, call.token)) {
    const body = {
      message: token === undefined ? 'Requires authentication' : 'Bad credentials',
      documentation_url: DOCS,
      status: '401',
    };
    return answer(401, body, { authorized: false });
  }
  const position = call.query.get('page');
  const label = call.query.get('labels');
  const scope = label !== null && isValidDate(label) ? label : undefined;
  if (call.path === OLD_PATH && call.method === 'GET') {
    const location = `${call.base}${PATHS[1]}${call.query.size > 0 ? `?${call.query.toString()}` : ''}`;
    const body = {
      message: 'Moved Permanently',
      url: location,
      documentation_url: `${DOCS}/guides/best-practices-for-using-the-rest-api#follow-redirects`,
    };
    return answer(301, body, {
      ...(scope ? { scope } : {}),
      position,
      headers: { location, ...rateHeaders(4990) },
    });
  }
  if (!PATHS.includes(call.path) || call.method !== 'GET') {
    return answer(404, { message: 'Not Found', documentation_url: DOCS, status: '404' });
  }
  if (scope === undefined) {
    const body = {
      message: 'Validation Failed: this repository lists the issues of one label, a date (labels=YYYY-MM-DD)',
      documentation_url: DOCS,
      status: '422',
    };
    return answer(422, body, { position });
  }
  const limited = call.habit('rate_limited', scope);
  if (limited) {
    const body = {
      message: 'API rate limit exceeded for user ID 583231.',
      documentation_url: `${DOCS}/overview/rate-limits-for-the-rest-api`,
    };
    return answer(403, body, {
      scope,
      position,
      habit: 'rate_limited',
      headers: rateHeaders(0, waitOf(limited)),
    });
  }
  const perPage = Math.min(MAX_PER_PAGE, intParam(call.query, 'per_page') ?? DEFAULT_PER_PAGE);
  const page = intParam(call.query, 'page') ?? 1;
  if (!(perPage >= 1 && page >= 1)) {
    return answer(
      422,
      {
        message: 'Validation Failed: per_page and page are positive integers',
        documentation_url: DOCS,
        status: '422',
      },
      { scope, position },
    );
  }
  const issues = collection(githubRestApi, scope, call.count(scope));
  const pages = Math.ceil(issues.length / perPage);
  const link = linkHeader(call.base, call.path, call.query, page, pages);
  const served = issues.slice((page - 1) * perPage, page * perPage);
  return answer(200, served, {
    scope,
    position,
    records: served.length,
    headers: { ...rateHeaders(4990), ...(link ? { link } : {}) },
  });
}

/** The GitHub REST imitation (see the file's header). */
export const githubRestApi: ApiDefinition<Issue> = {
  name: 'github-rest',
  title: 'GitHub REST (GET /repos/{owner}/{repo}/issues, Link header)',
  habits: {
    rate_limited: '403 with x-ratelimit-remaining 0 and x-ratelimit-reset = now + waitS (default 1), epoch',
  },
  item(scope, seq) {
    const day = Math.floor(Date.parse(`${scope}T00:00:00Z`) / 86_400_000);
    return {
      id: day * 100_000 + seq,
      node_id: `I_kwDOAB${charsOf(`github-rest|${scope}|${seq}`, 12, BASE62)}`,
      number: seq,
      title: `Ledger ${scope} #${seq}`,
      state: 'open',
      labels: [{ name: scope }],
      created_at: new Date(createdAt('github-rest', scope, seq)).toISOString().replace('.000Z', 'Z'),
    };
  },
  idOf: (i) => String(i.id),
  serve,
};
