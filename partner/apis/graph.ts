// Microsoft Graph (OData v4): `GET /v1.0/users/{user}/messages`, a mailbox's messages of one day.
// Facts from Graph's documentation ("Paging Microsoft Graph data in your app", "Use query
// parameters", "Microsoft Graph throttling guidance"), each a habit here:
// - the page is `{ "@odata.context", "value": [...], "@odata.nextLink" }`; `@odata.nextLink` is an
//   absolute URL carrying the original query plus `$skiptoken`, and on the last page it is left
//   out altogether (not null): a client reading it as `@odata` → `nextLink` finds nothing at all;
// - `$count=true` adds `@odata.count`, the number of items in the whole collection;
// - `$top` is the client's page size, but paging can be server-driven: the service may return
//   another number per page than asked (habit `server_page_size`: pages larger than `$top`);
// - throttled requests get 429 with `Retry-After` (seconds) and an OData error body (habit
//   `throttled`);
// - errors are `{ "error": { "code", "message" } }`; a bad token is 401 `InvalidAuthenticationToken`.
// The imitation filters only on `receivedDateTime ge <day start> and receivedDateTime lt <next day
// start>` (one UTC day); any other `$filter` is refused.
import { secretEquals } from '../auth.ts';
import {
  answer,
  type ApiAnswer,
  type ApiCall,
  type ApiDefinition,
  bearerOf,
  charsOf,
  collection,
  createdAt,
  dayOfWindow,
  decodeToken,
  encodeToken,
  intParam,
  pageOf,
  queryString,
  waitOf,
} from './kit.ts';

interface Message {
  id: string;
  subject: string;
  receivedDateTime: string;
  from: { emailAddress: { address: string } };
}

const ROUTE = /^\/v1\.0\/users\/([^/]+)\/messages$/;
const FILTER = /^receivedDateTime ge (\S+) and receivedDateTime lt (\S+)$/;
/** Graph's default page size of messages, and the largest `$top` it takes. */
const DEFAULT_TOP = 10;
const MAX_TOP = 1000;

const ID_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function error(status: number, code: string, message: string, extras: Partial<ApiAnswer> = {}): ApiAnswer {
  return answer(status, { error: { code, message } }, extras);
}

function serve(call: ApiCall): ApiAnswer {
  const route = ROUTE.exec(call.path);
  if (!route || call.method !== 'GET') {
    return error(400, 'BadRequest', `Resource not found for the segment '${call.path}'.`);
  }
  const token = bearerOf(call.headers);
  if (token === undefined || !secretEquals(token, call.token)) {
    return error(401, 'InvalidAuthenticationToken', 'Access token validation failure. Invalid audience.', {
      authorized: false,
      headers: { 'www-authenticate': 'Bearer realm=""' },
    });
  }
  const position = call.query.get('$skiptoken');
  const window = FILTER.exec(call.query.get('$filter') ?? '');
  const scope = window ? dayOfWindow(Date.parse(window[1] ?? ''), Date.parse(window[2] ?? '')) : undefined;
  if (scope === undefined) {
    return error(
      400,
      'BadRequest',
      "Invalid filter clause: this mailbox answers '$filter=receivedDateTime ge <day start> and receivedDateTime lt <next day start>' (one UTC day)",
      { position },
    );
  }
  const top = intParam(call.query, '$top') ?? DEFAULT_TOP;
  if (!(top >= 1 && top <= MAX_TOP)) {
    return error(400, 'BadRequest', `Invalid value '${call.query.get('$top')}' for query option '$top'.`, {
      scope,
      position,
    });
  }
  const throttled = call.habit('throttled', scope);
  if (throttled) {
    const wait = waitOf(throttled);
    const body = {
      error: {
        code: 'TooManyRequests',
        message: 'Please retry again later.',
        innerError: { code: '429', message: 'Please retry again later.' },
      },
    };
    return answer(429, body, {
      scope,
      position,
      habit: 'throttled',
      headers: { 'retry-after': String(wait) },
    });
  }
  const messages = collection(graphApi, scope, call.count(scope));
  const from = position === null ? 0 : decodeToken('graph', scope, position, messages.length - 1);
  if (from === undefined) {
    return error(400, 'BadRequest', `Invalid $skiptoken value '${position}'.`, { scope, position });
  }
  const driven = call.habit('server_page_size', scope);
  const size = driven ? (driven.pageSize ?? 25) : top;
  const { page, next } = pageOf(messages, from, size);
  const user = route[1] ?? 'me';
  const body: Record<string, unknown> = {
    '@odata.context': `${call.base}/v1.0/$metadata#users('${user}')/messages`,
  };
  if (call.query.get('$count') === 'true') body['@odata.count'] = messages.length;
  body.value = page;
  if (next !== undefined) {
    // The next link repeats the request's own options, as Graph's do.
    const params = [...call.query].filter(([name]) => name !== '$skiptoken');
    params.push(['$skiptoken', encodeToken('graph', scope, next)]);
    body['@odata.nextLink'] = `${call.base}/v1.0/users/${user}/messages?${queryString(params)}`;
  }
  return answer(200, body, {
    scope,
    position,
    records: page.length,
    ...(driven ? { habit: 'server_page_size' } : {}),
  });
}

/** The Microsoft Graph imitation (see the file's header). */
export const graphApi: ApiDefinition<Message> = {
  name: 'graph',
  title: 'Microsoft Graph / OData (GET /v1.0/users/{user}/messages)',
  habits: {
    throttled: '429 TooManyRequests with Retry-After: waitS (default 1)',
    server_page_size: 'server-driven paging: pages of pageSize (default 25) whatever $top asked',
  },
  item(scope, seq) {
    const at = new Date(createdAt('graph', scope, seq)).toISOString().replace('.000Z', 'Z');
    return {
      id: `AAMkAGI2${charsOf(`graph|${scope}|${seq}`, 40, ID_CHARS)}AAA=`,
      subject: `Invoice ${scope} #${seq}`,
      receivedDateTime: at,
      from: { emailAddress: { address: `billing${seq % 7}@contoso.example` } },
    };
  },
  idOf: (m) => m.id,
  serve,
};
