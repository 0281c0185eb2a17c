// Stripe list API: `GET /v1/customers`, the customers created in one day. Facts from Stripe's API
// reference ("Pagination", "List all customers", "Errors", "Rate limits"), each a habit here:
// - a list is `{ "object": "list", "url", "has_more", "data": [...] }`, newest first; the next page
//   is asked for with `starting_after` = the id of the last object of this one: there is no cursor
//   field, the client takes it from the last record (`data[-1].id`) while `has_more` is true;
// - `limit` is 1..100 (default 10); anything else is a 400;
// - `created[gte]` / `created[lt]` filter on the creation time (epoch seconds);
// - errors are `{ "error": { "type", "code"?, "param"?, "message" } }`: a wrong key is 401
//   `invalid_request_error` "Invalid API Key provided: sk_test_****…" (the key masked), an unknown
//   `starting_after` is 400 `resource_missing`;
// - too many requests get 429 with code `rate_limit`; Stripe sends no Retry-After and asks for
//   exponential backoff (habit `rate_limited`).
// Habit `loop` answers a `starting_after` with the page before the one asked for, `has_more: true`:
// a client following `data[-1].id` is sent back to the previous page's cursor (on the second page,
// the same cursor again; further on, a cursor it followed before).
import { secretEquals } from '../auth.ts';
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
  dayOfWindow,
  intParam,
} from './kit.ts';

interface Customer {
  id: string;
  object: 'customer';
  created: number;
  email: string;
  currency: string;
  livemode: false;
}

const MAX_LIMIT = 100;
const DEFAULT_LIMIT = 10;

function error(status: number, detail: Record<string, string>, extras: Partial<ApiAnswer> = {}): ApiAnswer {
  return answer(status, { error: { type: 'invalid_request_error', ...detail } }, extras);
}

/** The key as Stripe shows it in an error: its prefix and last four, the rest starred. */
function masked(key: string): string {
  const prefix = /^(sk|rk|pk)_(test|live)_/.exec(key)?.[0] ?? '';
  return `${prefix}${'*'.repeat(Math.max(0, key.length - prefix.length - 4))}${key.slice(-4)}`;
}

function serve(call: ApiCall): ApiAnswer {
  if (call.path !== '/v1/customers' || call.method !== 'GET') {
    return error(404, { message: `Unrecognized request URL (${call.method}: ${call.path}).` });
  }
  const key = bearerOf(call.headers);
  if (key === undefined || !secretEquals(key, call.token)) {
    const message =
      key === undefined
        ? "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY')."
        : `Invalid API Key provided: ${masked(key)}`;
    return error(401, { message }, { authorized: false });
  }
  const startingAfter = call.query.get('starting_after');
  const gte = intParam(call.query, 'created[gte]');
  const lt = intParam(call.query, 'created[lt]');
  const scope = gte !== undefined && lt !== undefined ? dayOfWindow(gte * 1000, lt * 1000) : undefined;
  const position = startingAfter;
  if (scope === undefined) {
    return error(
      400,
      {
        code: 'parameter_missing',
        param: 'created',
        message:
          'This account lists the customers of one UTC day: send created[gte] and created[lt] one day apart.',
      },
      { position },
    );
  }
  const limit = intParam(call.query, 'limit') ?? DEFAULT_LIMIT;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) {
    return error(
      400,
      {
        code: 'parameter_invalid_integer',
        param: 'limit',
        message: `Invalid limit: must be between 1 and ${MAX_LIMIT}`,
      },
      { scope, position },
    );
  }
  const limited = call.habit('rate_limited', scope);
  if (limited) {
    const message =
      'Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.';
    return error(429, { code: 'rate_limit', message }, { scope, position, habit: 'rate_limited' });
  }
  const customers = collection(stripeApi, scope, call.count(scope));
  let from = 0;
  if (startingAfter !== null) {
    const index = customers.findIndex((c) => c.id === startingAfter);
    if (index < 0) {
      return error(
        400,
        {
          code: 'resource_missing',
          param: 'starting_after',
          message: `No such customer: '${startingAfter}'`,
        },
        { scope, position },
      );
    }
    from = index + 1;
  }
  const loop = startingAfter !== null ? call.habit('loop', scope) : undefined;
  if (loop) from = Math.max(0, from - 2 * limit);
  const data = customers.slice(from, from + limit);
  const hasMore = loop ? true : from + data.length < customers.length;
  const body = { object: 'list', url: '/v1/customers', has_more: hasMore, data };
  return answer(200, body, { scope, position, records: data.length, ...(loop ? { habit: 'loop' } : {}) });
}

/** The Stripe imitation (see the file's header). */
export const stripeApi: ApiDefinition<Customer> = {
  name: 'stripe',
  title: 'Stripe list (GET /v1/customers)',
  habits: {
    rate_limited: '429 rate_limit, no Retry-After (Stripe asks for exponential backoff)',
    loop: 'for a starting_after, the page before the one asked for, has_more true: back to an earlier cursor',
  },
  newestFirst: true,
  item(scope, seq) {
    return {
      id: `cus_${charsOf(`stripe|${scope}|${seq}`, 14, BASE62)}`,
      object: 'customer',
      created: Math.floor(createdAt('stripe', scope, seq) / 1000),
      email: `customer${seq}@example.com`,
      currency: 'eur',
      livemode: false,
    };
  },
  idOf: (c) => c.id,
  serve,
};
