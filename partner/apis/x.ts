// X (Twitter) API v2: `GET /2/users/{id}/tweets`, a user's posts between two moments. Facts from
// X's documentation ("Pagination", "User Posts timeline", "Rate limits", "Response codes and
// errors"), each a habit here:
// - the answer is `{ "data": [...], "meta": { "result_count", "newest_id", "oldest_id",
//   "next_token" } }`, newest first; "the last page of results will not have a next_token
//   present": the end is an absent key;
// - a page may hold fewer posts than `max_results` (5..100) while more remain: "do not rely on the
//   results per page always equaling the max_results", so only the token ends a walk; an empty
//   page has no `data` at all, only `meta.result_count: 0`, and may still carry a `next_token`
//   (habit `empty_last_page`: after the last posts, a page with no posts and a next token, whose
//   own next page is empty and ends);
// - over the rate limit: 429 with `x-rate-limit-limit`, `x-rate-limit-remaining: 0` and
//   `x-rate-limit-reset`, an epoch second (habit `rate_limited`);
// - errors are problem details (`title`, `detail`, `type`); a wrong token is 401 `Unauthorized`.
// The imitation serves user 2244994945, one UTC day at a time (`start_time`, `end_time`).
import { secretEquals } from '../auth.ts';
import {
  answer,
  type ApiAnswer,
  type ApiCall,
  type ApiDefinition,
  bearerOf,
  collection,
  createdAt,
  dayOfWindow,
  decodeToken,
  encodeToken,
  epochIn,
  intParam,
  waitOf,
} from './kit.ts';

interface Post {
  id: string;
  text: string;
  created_at: string;
  edit_history_tweet_ids: string[];
}

/** The user whose timeline the imitation holds. */
export const X_USER = '2244994945';
const ROUTE = `/2/users/${X_USER}/tweets`;
const TWITTER_EPOCH = 1_288_834_974_657n;

function rateHeaders(remaining: number, resetS = 900): Record<string, string> {
  return {
    'x-rate-limit-limit': '900',
    'x-rate-limit-remaining': String(remaining),
    'x-rate-limit-reset': String(epochIn(resetS)),
  };
}

function invalid(
  parameter: string,
  value: string,
  message: string,
  extras: Partial<ApiAnswer> = {},
): ApiAnswer {
  const body = {
    errors: [{ parameters: { [parameter]: [value] }, message }],
    title: 'Invalid Request',
    detail: 'One or more parameters to your request was invalid.',
    type: 'https://api.twitter.com/2/problems/invalid-request',
  };
  return answer(400, body, extras);
}

function serve(call: ApiCall): ApiAnswer {
  const token = bearerOf(call.headers);
  if (token === undefined || !secretEquals(token, call.token)) {
    return answer(
      401,
      { title: 'Unauthorized', type: 'about:blank', status: 401, detail: 'Unauthorized' },
      { authorized: false },
    );
  }
  if (call.path !== ROUTE || call.method !== 'GET') {
    const body = {
      title: 'Not Found Error',
      detail: `Could not find ${call.path}`,
      type: 'https://api.twitter.com/2/problems/resource-not-found',
    };
    return answer(404, body);
  }
  const position = call.query.get('pagination_token');
  const start = call.query.get('start_time') ?? '';
  const scope = dayOfWindow(Date.parse(start), Date.parse(call.query.get('end_time') ?? ''));
  if (scope === undefined) {
    return invalid('start_time', start, 'This timeline answers start_time and end_time one UTC day apart', {
      position,
    });
  }
  const max = intParam(call.query, 'max_results') ?? 10;
  if (!(max >= 5 && max <= 100)) {
    const raw = call.query.get('max_results') ?? '';
    return invalid(
      'max_results',
      raw,
      `The \`max_results\` query parameter value [${raw}] is not between 5 and 100`,
      { scope, position },
    );
  }
  const limited = call.habit('rate_limited', scope);
  if (limited) {
    const body = {
      title: 'Too Many Requests',
      detail: 'Too Many Requests',
      type: 'about:blank',
      status: 429,
    };
    return answer(429, body, {
      scope,
      position,
      habit: 'rate_limited',
      headers: rateHeaders(0, waitOf(limited)),
    });
  }
  const posts = collection(xApi, scope, call.count(scope));
  // Tokens past the last post exist only on the empty pages the `empty_last_page` habit serves.
  const from = position === null ? 0 : decodeToken('x', scope, position, posts.length + 1);
  if (from === undefined) {
    return invalid(
      'pagination_token',
      position ?? '',
      `The \`pagination_token\` query parameter value [${position}] is not valid`,
      {
        scope,
        position,
      },
    );
  }
  const headers = rateHeaders(899);
  if (from >= posts.length) {
    const meta =
      from === posts.length
        ? { result_count: 0, next_token: encodeToken('x', scope, from + 1) }
        : { result_count: 0 };
    return answer(200, { meta }, { scope, position, records: 0, headers });
  }
  const data = posts.slice(from, from + max);
  const end = from + data.length;
  const more = end < posts.length;
  const empty = more ? undefined : call.habit('empty_last_page', scope);
  const meta: Record<string, unknown> = {
    newest_id: data[0]?.id,
    oldest_id: data[data.length - 1]?.id,
    result_count: data.length,
  };
  if (more || empty) meta.next_token = encodeToken('x', scope, end);
  return answer(
    200,
    { data, meta },
    { scope, position, records: data.length, headers, ...(empty ? { habit: 'empty_last_page' } : {}) },
  );
}

/** The X API v2 imitation (see the file's header). */
export const xApi: ApiDefinition<Post> = {
  name: 'x',
  title: 'X / Twitter API v2 (GET /2/users/{id}/tweets)',
  habits: {
    rate_limited: '429 with x-rate-limit-remaining 0 and x-rate-limit-reset = now + waitS (default 1), epoch',
    empty_last_page:
      'the last posts carry a next_token to an empty page (no data, result_count 0) that carries one more',
  },
  newestFirst: true,
  item(scope, seq) {
    const ms = BigInt(createdAt('x', scope, seq));
    const id = (((ms - TWITTER_EPOCH) << 22n) + BigInt(seq)).toString();
    return {
      id,
      text: `Ledger ${scope} #${seq}`,
      created_at: new Date(Number(ms)).toISOString(),
      edit_history_tweet_ids: [id],
    };
  },
  idOf: (p) => p.id,
  serve,
};
