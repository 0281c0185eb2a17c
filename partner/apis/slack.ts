// Slack Web API: `GET /api/conversations.history`, a channel's messages between two moments.
// Facts from Slack's documentation ("Pagination", "conversations.history", "Rate limits", "Web API
// basics"), each a habit here:
// - every answer is HTTP 200 with `ok`; a failure is `{ "ok": false, "error": "<code>" }` inside
//   that 200: no token is `not_authed`, a wrong one `invalid_auth` (also habit `invalid_auth`, a
//   token revoked mid-run);
// - cursor paging: `limit` (at most 999) and `cursor`; the next cursor is
//   `response_metadata.next_cursor`, an empty string (not null, not absent) at the end;
// - a page may hold fewer messages than `limit` while more remain (habit `short_pages`): only the
//   cursor says when the list ends;
// - newest first; `oldest` and `latest` bound the messages' `ts` (epoch seconds);
// - over a method's rate limit: HTTP 429 with `Retry-After` in seconds (habit `ratelimited`).
// The imitation serves channel `C0LEDGER01`, one UTC day at a time (`oldest` and `latest` a day apart).
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
  waitOf,
} from './kit.ts';

interface Message {
  type: 'message';
  user: string;
  text: string;
  ts: string;
}

/** The channel the imitation holds. */
export const SLACK_CHANNEL = 'C0LEDGER01';
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 999;

function failed(code: string, extras: Partial<ApiAnswer> = {}, detail?: string): ApiAnswer {
  const body = { ok: false, error: code, ...(detail ? { response_metadata: { messages: [detail] } } : {}) };
  return answer(200, body, extras);
}

function serve(call: ApiCall): ApiAnswer {
  if (call.path !== '/api/conversations.history') return failed('unknown_method');
  const token = bearerOf(call.headers);
  if (token === undefined) return failed('not_authed', { authorized: false });
  if (!secretEquals(token, call.token)) return failed('invalid_auth', { authorized: false });
  const position = call.query.get('cursor') || null;
  if (call.query.get('channel') !== SLACK_CHANNEL) return failed('channel_not_found', { position });
  const oldest = Number(call.query.get('oldest') ?? Number.NaN);
  const latest = Number(call.query.get('latest') ?? Number.NaN);
  const scope = dayOfWindow(oldest * 1000, latest * 1000);
  if (scope === undefined) {
    return failed(
      'invalid_arguments',
      { position },
      '[ERROR] this workspace serves one UTC day: oldest and latest one day apart',
    );
  }
  const rawLimit = call.query.get('limit');
  const limit = rawLimit === null ? DEFAULT_LIMIT : Math.min(MAX_LIMIT, Number(rawLimit));
  if (!(Number.isInteger(limit) && limit >= 1)) return failed('invalid_limit', { scope, position });
  const limited = call.habit('ratelimited', scope);
  if (limited) {
    return answer(
      429,
      { ok: false, error: 'ratelimited' },
      { scope, position, habit: 'ratelimited', headers: { 'retry-after': String(waitOf(limited)) } },
    );
  }
  if (call.habit('invalid_auth', scope))
    return failed('invalid_auth', { scope, position, habit: 'invalid_auth' });
  const messages = collection(slackApi, scope, call.count(scope));
  const from = position === null ? 0 : decodeToken('slack', scope, position, messages.length - 1);
  if (from === undefined) return failed('invalid_cursor', { scope, position });
  const short = call.habit('short_pages', scope);
  const size = short ? Math.min(limit, short.pageSize ?? 3) : limit;
  const page = messages.slice(from, from + size);
  const end = from + page.length;
  const more = end < messages.length;
  const body = {
    ok: true,
    messages: page,
    has_more: more,
    pin_count: 0,
    channel_actions_ts: null,
    channel_actions_count: 0,
    response_metadata: { next_cursor: more ? encodeToken('slack', scope, end) : '' },
  };
  return answer(200, body, {
    scope,
    position,
    records: page.length,
    ...(short ? { habit: 'short_pages' } : {}),
  });
}

/** The Slack imitation (see the file's header). */
export const slackApi: ApiDefinition<Message> = {
  name: 'slack',
  title: 'Slack conversations.history (GET /api/conversations.history)',
  habits: {
    ratelimited: 'HTTP 429 with Retry-After: waitS (default 1), body ok:false error ratelimited',
    invalid_auth: 'HTTP 200 ok:false error invalid_auth, as for a token revoked mid-run',
    short_pages: 'pages of pageSize (default 3) messages, fewer than limit, while more remain',
  },
  newestFirst: true,
  item(scope, seq) {
    const seconds = Math.floor(createdAt('slack', scope, seq) / 1000);
    return {
      type: 'message',
      user: `U0${charsOf(`slack|user|${seq % 5}`, 9, 'ABCDEFGHJKLMNPQRSTUVWXYZ0123456789')}`,
      text: `Ledger entry ${scope} #${seq}`,
      // Slack's ts: the epoch second and a sequence within it, unique in the channel.
      ts: `${seconds}.${String(seq).padStart(6, '0')}`,
    };
  },
  idOf: (m) => m.ts,
  serve,
};
