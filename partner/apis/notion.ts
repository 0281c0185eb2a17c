// Notion search: `POST /v1/search`, the pages whose title holds a text. Facts from Notion's API
// reference ("Search by title", "Pagination", "Request limits", "Status codes", "Versioning"),
// each a habit here:
// - paging parameters go in the JSON body: `start_cursor` (a string, or left out for the first
//   page) and `page_size` (at most 100, default 100); a body with `"start_cursor": null` fails
//   validation (400 `validation_error`: "body.start_cursor should be a string or `undefined`,
//   instead was `null`."): a client must leave the key out;
// - the answer is `{ "object": "list", "results", "next_cursor", "has_more" }`, `next_cursor` null
//   on the last page;
// - every request needs a `Notion-Version` header (else 400 `missing_version`);
// - errors are `{ "object": "error", "status", "code", "message" }`: a wrong token is 401
//   `unauthorized` "API token is invalid.";
// - over the rate limit: 429 `rate_limited` with `Retry-After` in seconds (habit `rate_limited`).
// The imitation's workspace holds pages titled `Ledger <date> #<n>`; the search `query` must name
// one date, the pages of that day being the ones it matches.
import { secretEquals } from '../auth.ts';
import {
  answer,
  type ApiAnswer,
  type ApiCall,
  type ApiDefinition,
  bearerOf,
  collection,
  createdAt,
  headerOf,
  uuidOf,
  waitOf,
} from './kit.ts';

interface Page {
  object: 'page';
  id: string;
  created_time: string;
  last_edited_time: string;
  archived: false;
  properties: { title: { id: 'title'; type: 'title'; title: { type: 'text'; plain_text: string }[] } };
  url: string;
}

const MAX_PAGE_SIZE = 100;

function error(status: number, code: string, message: string, extras: Partial<ApiAnswer> = {}): ApiAnswer {
  return answer(status, { object: 'error', status, code, message }, extras);
}

/** How Notion names a JSON value's type in its validation messages. */
function shown(value: unknown): string {
  return value === null ? '`null`' : value === undefined ? '`undefined`' : `\`${JSON.stringify(value)}\``;
}

function serve(call: ApiCall): ApiAnswer {
  if (call.path !== '/v1/search' || call.method !== 'POST') {
    return error(400, 'invalid_request_url', 'Invalid request URL.');
  }
  const token = bearerOf(call.headers);
  if (token === undefined || !secretEquals(token, call.token)) {
    return error(401, 'unauthorized', 'API token is invalid.', { authorized: false });
  }
  const version = headerOf(call.headers, 'notion-version');
  if (version === undefined) {
    return error(
      400,
      'missing_version',
      'Notion-Version header failed validation: Notion-Version header should be defined, instead was `undefined`.',
    );
  }
  const body = call.body;
  if (call.bodyError !== undefined || typeof body !== 'object' || body === null || Array.isArray(body)) {
    return error(400, 'invalid_json', 'Error parsing JSON body.');
  }
  const { query, start_cursor: cursor, page_size: size } = body as Record<string, unknown>;
  const position = typeof cursor === 'string' ? cursor : null;
  if (cursor !== undefined && typeof cursor !== 'string') {
    return error(
      400,
      'validation_error',
      `body failed validation: body.start_cursor should be a string or \`undefined\`, instead was ${shown(cursor)}.`,
      { position },
    );
  }
  if (size !== undefined && !(Number.isInteger(size) && (size as number) >= 1)) {
    return error(
      400,
      'validation_error',
      `body failed validation: body.page_size should be a number or \`undefined\`, instead was ${shown(size)}.`,
      { position },
    );
  }
  if (typeof size === 'number' && size > MAX_PAGE_SIZE) {
    return error(
      400,
      'validation_error',
      `body failed validation: body.page_size should be ≤ \`${MAX_PAGE_SIZE}\`, instead was \`${size}\`.`,
      { position },
    );
  }
  const scope = typeof query === 'string' ? /\b(\d{4}-\d{2}-\d{2})\b/.exec(query)?.[1] : undefined;
  if (scope === undefined) {
    return error(
      400,
      'validation_error',
      'This workspace answers a search whose query names one date (its pages are titled "Ledger <YYYY-MM-DD> #<n>").',
      { position },
    );
  }
  const limited = call.habit('rate_limited', scope);
  if (limited) {
    return error(429, 'rate_limited', 'You have been rate limited. Please try again in a few minutes.', {
      scope,
      position,
      habit: 'rate_limited',
      headers: { 'retry-after': String(waitOf(limited)) },
    });
  }
  const pages = collection(notionApi, scope, call.count(scope));
  // Notion's cursor is the id of the next page's first result.
  const from = position === null ? 0 : pages.findIndex((p) => p.id === position);
  if (from < 0) {
    return error(400, 'validation_error', `The start_cursor provided is invalid: ${position}`, {
      scope,
      position,
    });
  }
  const results = pages.slice(from, from + ((size as number | undefined) ?? MAX_PAGE_SIZE));
  const next = pages[from + results.length];
  const page = {
    object: 'list',
    results,
    next_cursor: next?.id ?? null,
    has_more: next !== undefined,
    type: 'page_or_database',
    page_or_database: {},
  };
  return answer(200, page, { scope, position, records: results.length });
}

/** The Notion imitation (see the file's header). */
export const notionApi: ApiDefinition<Page> = {
  name: 'notion',
  title: 'Notion search (POST /v1/search)',
  habits: { rate_limited: '429 rate_limited with Retry-After: waitS (default 1)' },
  item(scope, seq) {
    const at = new Date(createdAt('notion', scope, seq)).toISOString();
    const id = uuidOf(`notion|${scope}|${seq}`);
    const title = `Ledger ${scope} #${seq}`;
    return {
      object: 'page',
      id,
      created_time: at,
      last_edited_time: at,
      archived: false,
      properties: { title: { id: 'title', type: 'title', title: [{ type: 'text', plain_text: title }] } },
      url: `https://www.notion.so/Ledger-${id.replaceAll('-', '')}`,
    };
  },
  idOf: (p) => p.id,
  serve,
};
