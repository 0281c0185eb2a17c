// Jira Cloud REST API v3: `GET /rest/api/3/search?jql=…`, the issues a JQL query finds. Facts from
// Atlassian's documentation ("Issue search: search for issues using JQL", "Pagination",
// "Changing maxResults parameter for Jira Cloud REST API", "Rate limiting"), each a habit here:
// - offset paging: `startAt` (0-based) and `maxResults`; the answer is `{ "expand", "startAt",
//   "maxResults", "total", "issues" }`;
// - `maxResults` is a request, not a promise: the server caps it at its own limit and says so in
//   the answer's `maxResults`, so a page shorter than asked is not the end — `total` is (the
//   cap is 100 here; habit `max_results_cap` lowers it to pageSize);
// - errors are `{ "errorMessages": [...], "errors": {} }`; a JQL error is a 400;
// - API tokens go in basic auth as `email:api_token`; a wrong one is a 401;
// - over the rate limit: 429 with `Retry-After` (seconds) and `X-RateLimit-Reset`, an ISO
//   timestamp (habit `rate_limited`).
// The imitation reads `project = LED AND labels = "ledger-<YYYY-MM-DD>"` (an `ORDER BY` allowed)
// and nothing else.
import { secretEquals } from '../auth.ts';
import { isValidDate } from '../records.ts';
import {
  answer,
  type ApiAnswer,
  type ApiCall,
  type ApiDefinition,
  basicOf,
  collection,
  createdAt,
  intParam,
  waitOf,
} from './kit.ts';

interface Issue {
  expand: string;
  id: string;
  self: string;
  key: string;
  fields: { summary: string; created: string; labels: string[] };
}

const PATH = '/rest/api/3/search';
const JQL =
  /^project\s*=\s*LED\s+AND\s+labels\s*=\s*"?ledger-(\d{4}-\d{2}-\d{2})"?(?:\s+ORDER\s+BY\s+\w+(?:\s+(?:ASC|DESC))?)?$/i;
const DEFAULT_MAX = 50;
const SERVER_CAP = 100;

function error(status: number, messages: string[], extras: Partial<ApiAnswer> = {}): ApiAnswer {
  return answer(status, { errorMessages: messages, errors: {} }, extras);
}

function serve(call: ApiCall): ApiAnswer {
  const pair = basicOf(call.headers);
  const password = pair?.slice(pair.indexOf(':') + 1) ?? '';
  if (pair === undefined || !pair.includes('@') || !secretEquals(password, call.token)) {
    return error(401, ['Client must be authenticated to access this resource.'], { authorized: false });
  }
  if (call.path !== PATH || call.method !== 'GET') return error(404, ['null for uri: ' + call.path]);
  const position = call.query.get('startAt');
  const jql = JQL.exec((call.query.get('jql') ?? '').trim());
  const scope = jql?.[1] !== undefined && isValidDate(jql[1]) ? jql[1] : undefined;
  if (scope === undefined) {
    return error(
      400,
      ['Error in the JQL Query: this site answers project = LED AND labels = "ledger-<YYYY-MM-DD>" only.'],
      {
        position,
      },
    );
  }
  const startAt = intParam(call.query, 'startAt') ?? 0;
  const asked = intParam(call.query, 'maxResults') ?? DEFAULT_MAX;
  if (!(startAt >= 0) || !(asked >= 0)) {
    return error(400, ['startAt and maxResults must be non-negative integers.'], { scope, position });
  }
  const limited = call.habit('rate_limited', scope);
  if (limited) {
    const wait = waitOf(limited);
    return answer(
      429,
      { errorMessages: ['Rate limit exceeded.'], errors: {} },
      {
        scope,
        position,
        habit: 'rate_limited',
        headers: {
          'retry-after': String(wait),
          'x-ratelimit-limit': '350',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': new Date(Date.now() + wait * 1000).toISOString(),
          'ratelimit-reason': 'jira-quota-global-based',
        },
      },
    );
  }
  const capped = call.habit('max_results_cap', scope);
  const cap = capped ? (capped.pageSize ?? 10) : SERVER_CAP;
  const maxResults = Math.min(asked, cap);
  const issues = collection(jiraApi, scope, call.count(scope));
  const body = {
    expand: 'schema,names',
    startAt,
    maxResults,
    total: issues.length,
    issues: issues.slice(startAt, startAt + maxResults),
  };
  return answer(200, body, {
    scope,
    position,
    records: body.issues.length,
    ...(capped && asked > cap ? { habit: 'max_results_cap' } : {}),
  });
}

/** The Jira Cloud imitation (see the file's header). */
export const jiraApi: ApiDefinition<Issue> = {
  name: 'jira',
  title: 'Jira Cloud search (GET /rest/api/3/search)',
  habits: {
    rate_limited: '429 with Retry-After: waitS (default 1) and X-RateLimit-Reset (ISO)',
    max_results_cap: 'the server caps maxResults at pageSize (default 10), below what was asked',
  },
  item(scope, seq) {
    const day = Math.floor(Date.parse(`${scope}T00:00:00Z`) / 86_400_000);
    const id = String(day * 100_000 + seq);
    return {
      expand: 'operations,versionedRepresentations,editmeta,changelog,renderedFields',
      id,
      self: `https://acme.atlassian.net/rest/api/3/issue/${id}`,
      key: `LED-${day * 1000 + seq}`,
      fields: {
        summary: `Ledger ${scope} #${seq}`,
        created: new Date(createdAt('jira', scope, seq)).toISOString().replace('Z', '+0000'),
        labels: [`ledger-${scope}`],
      },
    };
  },
  idOf: (i) => i.id,
  serve,
};
