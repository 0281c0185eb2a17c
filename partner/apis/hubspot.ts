// HubSpot CRM API v3: `GET /crm/v3/objects/contacts`, the account's contacts. Facts from HubSpot's
// documentation ("CRM API: Contacts", "Paging", "API usage guidelines and limits", "Error
// handling"), each a habit here:
// - the page is `{ "results": [...], "paging": { "next": { "after", "link" } } }`; on the last page
//   the whole `paging` object is left out (not null, not empty): the end is a path that is absent;
// - `limit` is at most 100 (default 10); `after` is the token of `paging.next.after`;
// - over the burst limit: 429 with no `Retry-After`, the limit in its own headers
//   (`X-HubSpot-RateLimit-Max`, `-Remaining: 0`, `-Interval-Milliseconds`: the rolling window,
//   10 000 ms, to wait out) and a body `{ "status": "error", "errorType": "RATE_LIMIT",
//   "policyName" }` (habit `rate_limited`; the interval is waitS here);
// - errors are `{ "status": "error", "message", "correlationId", "category" }`: a wrong token is
//   401 `INVALID_AUTHENTICATION`, a bad `limit` 400 `VALIDATION_ERROR`.
// The list has no date filter: the imitation holds one collection (scope `account`), whatever
// the business date of the run.
import { secretEquals } from '../auth.ts';
import {
  ACCOUNT_SCOPE,
  answer,
  type ApiAnswer,
  type ApiCall,
  type ApiDefinition,
  bearerOf,
  collection,
  createdAt,
  intParam,
  uuidOf,
  waitOf,
} from './kit.ts';

interface Contact {
  id: string;
  properties: {
    createdate: string;
    email: string;
    firstname: string;
    hs_object_id: string;
    lastmodifieddate: string;
  };
  createdAt: string;
  updatedAt: string;
  archived: false;
}

const PATH = '/crm/v3/objects/contacts';
const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 100;
/** HubSpot's burst window and its allowance. */
const INTERVAL_MS = 10_000;
const MAX_PER_INTERVAL = 100;

function rateHeaders(remaining: number, intervalMs = INTERVAL_MS): Record<string, string> {
  return {
    'x-hubspot-ratelimit-daily': '500000',
    'x-hubspot-ratelimit-daily-remaining': '499000',
    'x-hubspot-ratelimit-interval-milliseconds': String(intervalMs),
    'x-hubspot-ratelimit-max': String(MAX_PER_INTERVAL),
    'x-hubspot-ratelimit-remaining': String(remaining),
  };
}

function error(
  status: number,
  category: string,
  message: string,
  extras: Partial<ApiAnswer> = {},
): ApiAnswer {
  return answer(
    status,
    { status: 'error', message, correlationId: uuidOf(`hubspot|${message}`), category },
    extras,
  );
}

function serve(call: ApiCall): ApiAnswer {
  const token = bearerOf(call.headers);
  if (token === undefined || !secretEquals(token, call.token)) {
    return error(
      401,
      'INVALID_AUTHENTICATION',
      'Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview',
      { authorized: false },
    );
  }
  if (call.path !== PATH || call.method !== 'GET')
    return error(404, 'OBJECT_NOT_FOUND', 'Resource not found');
  const scope = ACCOUNT_SCOPE;
  const after = call.query.get('after');
  const position = after;
  const limit = intParam(call.query, 'limit') ?? DEFAULT_LIMIT;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) {
    return error(
      400,
      'VALIDATION_ERROR',
      `limit must be between 1 and ${MAX_LIMIT} (was ${call.query.get('limit')})`,
      { scope, position },
    );
  }
  const limited = call.habit('rate_limited', scope);
  if (limited) {
    const body = {
      status: 'error',
      message: 'You have reached your ten_secondly_rolling limit.',
      errorType: 'RATE_LIMIT',
      correlationId: uuidOf(`hubspot|limited|${limited.seen}`),
      policyName: 'TEN_SECONDLY_ROLLING',
    };
    return answer(429, body, {
      scope,
      position,
      habit: 'rate_limited',
      headers: rateHeaders(0, waitOf(limited) * 1000),
    });
  }
  const contacts = collection(hubspotApi, scope, call.count(scope));
  // HubSpot's `after` is the id of the next page's first contact.
  const from = after === null ? 0 : contacts.findIndex((c) => c.id === after);
  if (from <= 0 && after !== null) {
    return error(
      400,
      'VALIDATION_ERROR',
      `Invalid input: after '${after}' is not a paging token of this list`,
      { scope, position },
    );
  }
  const results = contacts.slice(from, from + limit);
  const next = contacts[from + results.length];
  const link = new URL(`${call.base}${PATH}`);
  link.searchParams.set('limit', String(limit));
  if (next) link.searchParams.set('after', next.id);
  const body = { results, ...(next ? { paging: { next: { after: next.id, link: link.href } } } : {}) };
  return answer(200, body, {
    scope,
    position,
    records: results.length,
    headers: rateHeaders(MAX_PER_INTERVAL - 1),
  });
}

/** The HubSpot imitation (see the file's header). */
export const hubspotApi: ApiDefinition<Contact> = {
  name: 'hubspot',
  title: 'HubSpot CRM list (GET /crm/v3/objects/contacts)',
  habits: {
    rate_limited:
      '429 RATE_LIMIT, no Retry-After, X-HubSpot-RateLimit-Remaining 0, -Interval-Milliseconds waitS×1000 (default 1000)',
  },
  undated: true,
  item(scope, seq) {
    const at = new Date(createdAt('hubspot', scope, seq)).toISOString();
    const id = String(1000 + seq * 51);
    return {
      id,
      properties: {
        createdate: at,
        email: `contact${seq}@example.com`,
        firstname: `Contact ${seq}`,
        hs_object_id: id,
        lastmodifieddate: at,
      },
      createdAt: at,
      updatedAt: at,
      archived: false,
    };
  },
  idOf: (c) => c.id,
  serve,
};
