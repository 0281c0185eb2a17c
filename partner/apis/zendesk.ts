// Zendesk Support API: `GET /api/v2/tickets.json`, the account's tickets, with cursor paging.
// Facts from Zendesk's documentation ("Paginating through lists using cursor pagination",
// "Pagination", "Rate limits", "Security and authentication"), each a habit here:
// - cursor paging is asked for with `page[size]` (at most 100); the next page with
//   `page[after]` = `meta.after_cursor`, or by following `links.next`; `meta.has_more` says
//   whether there is one: the documented end is `has_more: false`, not a missing cursor (habit
//   `cursor_on_last_page`: the last page still names an after cursor and a next link, which lead
//   to an empty page);
// - without `page[size]` the list falls back to offset paging (`page`, `next_page`);
// - API tokens go in basic auth as `{email}/token:{api_token}`; a wrong one is 401
//   `{ "error": "Couldn't authenticate you" }`;
// - over the rate limit: 429 with `Retry-After` in seconds (habit `rate_limited`).
// The list has no date filter: the imitation holds one collection (scope `account`), whatever
// the business date of the run.
import { secretEquals } from '../auth.ts';
import {
  ACCOUNT_SCOPE,
  answer,
  type ApiAnswer,
  type ApiCall,
  type ApiDefinition,
  basicOf,
  collection,
  createdAt,
  decodeToken,
  encodeToken,
  intParam,
  waitOf,
} from './kit.ts';

interface Ticket {
  id: number;
  url: string;
  subject: string;
  status: 'open' | 'solved';
  created_at: string;
}

const PATHS = ['/api/v2/tickets.json', '/api/v2/tickets'];
const MAX_SIZE = 100;
const OFFSET_PAGE_SIZE = 100;

function invalid(description: string, extras: Partial<ApiAnswer> = {}): ApiAnswer {
  return answer(400, { error: 'InvalidPaginationParameter', description }, extras);
}

function serve(call: ApiCall): ApiAnswer {
  const pair = basicOf(call.headers);
  const password = pair?.slice(pair.indexOf(':') + 1) ?? '';
  const user = pair?.slice(0, Math.max(0, pair.indexOf(':'))) ?? '';
  if (!user.endsWith('/token') || !secretEquals(password, call.token)) {
    return answer(401, { error: "Couldn't authenticate you" }, { authorized: false });
  }
  if (!PATHS.includes(call.path) || call.method !== 'GET') {
    return answer(404, { error: 'InvalidEndpoint', description: 'Not found' });
  }
  const scope = ACCOUNT_SCOPE;
  const after = call.query.get('page[after]');
  const size = intParam(call.query, 'page[size]');
  const position = after ?? call.query.get('page');
  const limited = call.habit('rate_limited', scope);
  if (limited) {
    const body = {
      error: 'APIRateLimitExceeded',
      description: 'Number of allowed API requests per minute exceeded',
    };
    return answer(429, body, {
      scope,
      position,
      habit: 'rate_limited',
      headers: { 'retry-after': String(waitOf(limited)) },
    });
  }
  const tickets = collection(zendeskApi, scope, call.count(scope));
  const link = (params: Record<string, string>) => {
    const url = new URL(`${call.base}/api/v2/tickets.json`);
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    return url.href;
  };
  if (size === undefined) {
    const page = intParam(call.query, 'page') ?? 1;
    if (!(page >= 1)) return invalid('page must be a positive integer', { scope, position });
    const from = (page - 1) * OFFSET_PAGE_SIZE;
    const more = from + OFFSET_PAGE_SIZE < tickets.length;
    const body = {
      tickets: tickets.slice(from, from + OFFSET_PAGE_SIZE),
      next_page: more ? link({ page: String(page + 1) }) : null,
      previous_page: page > 1 ? link({ page: String(page - 1) }) : null,
      count: tickets.length,
    };
    return answer(200, body, { scope, position, records: body.tickets.length });
  }
  if (!(size >= 1 && size <= MAX_SIZE))
    return invalid(`page[size] must be between 1 and ${MAX_SIZE}`, { scope, position });
  const from = after === null ? 0 : decodeToken('zendesk', scope, after, tickets.length);
  if (from === undefined) return invalid('page[after] is not a cursor of this list', { scope, position });
  const page = tickets.slice(from, from + size);
  const end = from + page.length;
  const hasMore = end < tickets.length;
  const keep = !hasMore && page.length > 0 ? call.habit('cursor_on_last_page', scope) : undefined;
  const afterCursor = hasMore || keep ? encodeToken('zendesk', scope, end) : null;
  const body = {
    tickets: page,
    meta: {
      has_more: hasMore,
      after_cursor: afterCursor,
      before_cursor: from > 0 ? encodeToken('zendesk', scope, from) : null,
    },
    links: {
      next: afterCursor === null ? null : link({ 'page[size]': String(size), 'page[after]': afterCursor }),
      prev:
        from > 0
          ? link({ 'page[size]': String(size), 'page[before]': encodeToken('zendesk', scope, from) })
          : null,
    },
  };
  return answer(200, body, {
    scope,
    position,
    records: page.length,
    ...(keep ? { habit: 'cursor_on_last_page' } : {}),
  });
}

/** The Zendesk imitation (see the file's header). */
export const zendeskApi: ApiDefinition<Ticket> = {
  name: 'zendesk',
  title: 'Zendesk cursor paging (GET /api/v2/tickets.json)',
  habits: {
    rate_limited: '429 APIRateLimitExceeded with Retry-After: waitS (default 1)',
    cursor_on_last_page:
      'the last page (has_more false) still names an after_cursor and links.next, to an empty page',
  },
  undated: true,
  item(scope, seq) {
    const id = 35_000 + seq;
    return {
      id,
      url: `https://acme.zendesk.com/api/v2/tickets/${id}.json`,
      subject: `Ticket #${seq}`,
      status: seq % 3 === 0 ? 'solved' : 'open',
      created_at: new Date(createdAt('zendesk', scope, seq)).toISOString().replace('.000Z', 'Z'),
    };
  },
  idOf: (t) => String(t.id),
  serve,
};
