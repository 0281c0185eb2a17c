// Shopify GraphQL Admin API: `POST /admin/api/<version>/graphql.json`, the products created in a
// window, as a connection. Facts from Shopify's documentation ("Paginating results with
// GraphQL", "GraphQL Admin API rate limits", "Shopify API search syntax", "Authentication"),
// each a habit here:
// - a connection takes `first` (at most 250) and `after`, and answers `edges` of
//   `{ cursor, node }` (or `nodes`) and `pageInfo { hasNextPage endCursor }`;
// - rate limits are by calculated query cost: every answer carries `extensions.cost`
//   (`requestedQueryCost`, `actualQueryCost`, `throttleStatus { maximumAvailable,
//   currentlyAvailable, restoreRate }`); a throttled request is an HTTP 200 with
//   `errors: [{ "message": "Throttled", "extensions": { "code": "THROTTLED" } }]`, no `data`,
//   and the cost extension saying how many points are available (habit `throttled`: the
//   points come back in waitS seconds);
// - the token goes in the `X-Shopify-Access-Token` header; a wrong one is 401
//   `{ "errors": "[API] Invalid API key or access token (unrecognized login or wrong password)" }`.
// The imitation reads `variables` (`first`, `after`, `query`) and checks that the query asks for
// `products`; the search `query` must be `created_at:>='<start>' created_at:<'<end>'`, one UTC day.
import { secretEquals } from '../auth.ts';
import {
  answer,
  type ApiAnswer,
  type ApiCall,
  type ApiDefinition,
  collection,
  createdAt,
  dayOfWindow,
  decodeToken,
  encodeToken,
  headerOf,
  waitOf,
} from './kit.ts';

interface Product {
  id: string;
  title: string;
  createdAt: string;
}

const ROUTE = /^\/admin\/api\/\d{4}-\d{2}\/graphql\.json$/;
const WINDOW = /created_at:>=?'?([^'\s]+)'?\s+(?:AND\s+)?created_at:<'?([^'\s]+)'?/i;
const MAX_FIRST = 250;
const BUCKET = 2000;
const RESTORE_RATE = 100;

/** The cost extension of a query asking for `first` items that cost `actual` (null: not run). */
function cost(first: number, actual: number | null, available: number) {
  return {
    cost: {
      requestedQueryCost: first + 2,
      actualQueryCost: actual,
      throttleStatus: { maximumAvailable: BUCKET, currentlyAvailable: available, restoreRate: RESTORE_RATE },
    },
  };
}

function errors(messages: Record<string, unknown>[], extras: Partial<ApiAnswer> = {}): ApiAnswer {
  return answer(200, { errors: messages }, extras);
}

function serve(call: ApiCall): ApiAnswer {
  if (!ROUTE.test(call.path) || call.method !== 'POST') return answer(404, { errors: 'Not Found' });
  const token = headerOf(call.headers, 'x-shopify-access-token');
  if (token === undefined || !secretEquals(token, call.token)) {
    const body = { errors: '[API] Invalid API key or access token (unrecognized login or wrong password)' };
    return answer(401, body, { authorized: false });
  }
  const body = (call.body ?? {}) as { query?: unknown; variables?: unknown };
  if (typeof body.query !== 'string' || !/\bproducts\s*\(/.test(body.query)) {
    return errors([
      { message: 'Parse error: this shop answers a query for products(first:, after:, query:)' },
    ]);
  }
  const vars = (
    typeof body.variables === 'object' && body.variables !== null ? body.variables : {}
  ) as Record<string, unknown>;
  const after = typeof vars.after === 'string' ? vars.after : null;
  const position = after;
  const window = WINDOW.exec(typeof vars.query === 'string' ? vars.query : '');
  const scope = window ? dayOfWindow(Date.parse(window[1] ?? ''), Date.parse(window[2] ?? '')) : undefined;
  if (scope === undefined) {
    const message =
      "This shop searches products by created_at:>='<day start>' created_at:<'<next day start>' (one UTC day)";
    return errors([{ message, path: ['products'], extensions: { code: 'BAD_REQUEST' } }], { position });
  }
  const first = vars.first;
  if (typeof first !== 'number' || !Number.isInteger(first) || first < 1 || first > MAX_FIRST) {
    const message = `you must provide one of first or last, from 1 to ${MAX_FIRST}`;
    return errors([{ message, path: ['products'], extensions: { code: 'BAD_REQUEST' } }], {
      scope,
      position,
    });
  }
  const throttled = call.habit('throttled', scope);
  if (throttled) {
    // The points come back at the restore rate: the request fits again after waitS seconds.
    const available = Math.max(0, first + 2 - RESTORE_RATE * waitOf(throttled));
    const page = {
      errors: [
        {
          message: 'Throttled',
          extensions: { code: 'THROTTLED', documentation: 'https://shopify.dev/api/usage/rate-limits' },
        },
      ],
      extensions: cost(first, null, available),
    };
    return answer(200, page, { scope, position, habit: 'throttled' });
  }
  const products = collection(shopifyApi, scope, call.count(scope));
  const from = after === null ? 0 : decodeToken('shopify', scope, after, products.length);
  if (from === undefined) {
    return errors([{ message: 'Invalid cursor for current pagination sort.', path: ['products'] }], {
      scope,
      position,
    });
  }
  const page = products.slice(from, from + first);
  const cursorAt = (i: number) => encodeToken('shopify', scope, from + i + 1);
  const connection: Record<string, unknown> = {
    pageInfo: {
      hasNextPage: from + page.length < products.length,
      hasPreviousPage: from > 0,
      startCursor: page.length > 0 ? cursorAt(0) : null,
      endCursor: page.length > 0 ? cursorAt(page.length - 1) : null,
    },
  };
  if (/\bedges\b/.test(body.query)) connection.edges = page.map((node, i) => ({ cursor: cursorAt(i), node }));
  if (/\bnodes\b/.test(body.query)) connection.nodes = page;
  const extensions = cost(first, page.length + 2, BUCKET - (page.length + 2));
  return answer(
    200,
    { data: { products: connection }, extensions },
    { scope, position, records: page.length },
  );
}

/** The Shopify imitation (see the file's header). */
export const shopifyApi: ApiDefinition<Product> = {
  name: 'shopify',
  title: 'Shopify GraphQL Admin (POST /admin/api/2024-10/graphql.json, products)',
  habits: {
    throttled:
      'HTTP 200 with errors[{extensions: {code: THROTTLED}}] and extensions.cost.throttleStatus; points back in waitS (default 1)',
  },
  item(scope, seq) {
    const day = Math.floor(Date.parse(`${scope}T00:00:00Z`) / 86_400_000);
    return {
      id: `gid://shopify/Product/${day * 100_000 + seq}`,
      title: `Product ${scope} #${seq}`,
      createdAt: new Date(createdAt('shopify', scope, seq)).toISOString().replace('.000Z', 'Z'),
    };
  },
  idOf: (p) => p.id,
  serve,
};
