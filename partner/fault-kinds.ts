// The vocabulary of fault injection: which kinds of fault exist, which routes they hit, their limits.

/**
 * What an injected fault does to a matching request:
 * - `status`: respond with `status` (and `Retry-After: retryAfter` when given), body untouched by the app;
 *   on the read routes (records, rates, catalog) the JSON body's `message` is `body` when given (e.g. to
 *   test that an error body carrying a token never reaches a log or a record), and with
 *   `rateLimitReset` n the answer carries `X-RateLimit-Remaining: 0` and `X-RateLimit-Reset`: the
 *   epoch second n seconds from now (rounded up), or with `rateLimitResetStyle: 'seconds'` n itself,
 *   as GitHub-style and Twitter-style limits write it (usually status 429 without `retryAfter`);
 *   on the read routes a `delayMs` makes it a slow error: the answer comes after that wait, as an
 *   overloaded partner's 503 does (a client that wants its worker slot back must not wait for it);
 * - `reset`: destroy the socket with a TCP RST, no response;
 * - `delay`: wait `delayMs`, then respond normally (lets clients hit their response timeout);
 * - `truncate`: send headers and half the body, then destroy the socket.
 * On the events route a `status` or `reset` fault leaves the event unapplied; `delay` applies it
 * after the wait. Only these three kinds are valid there.
 * On the effect routes (submissions, journal; also only these three kinds) the fault's `phase`
 * decides whether the effect (create, confirm, post, void) happens: `before` (default) faults hit
 * before it (`status`/`reset`: no effect; `delay`: the effect happens after the wait, unless the
 * client left or the partner closed meanwhile), `after` faults hit once it happened (`status`: an
 * error answer for a done effect; `reset`: a lost answer; `delay`: the answer after the wait, if
 * the client is still there).
 * Late effects, as real partners have them: with a late-effect window (`lateEffectMs` of the fault,
 * else of the server; 0 = off), a `before` delay whose client leaves at most that long before the
 * wait ends is still processed when the wait ends, as if the partner had not noticed. Its one
 * ledger entry is still the 499 `client_closed` one, recorded then, with `late: true`, the
 * submission or journal entry id and `effect: true` when the request changed something. A client
 * leaving earlier than that, or a partner closing before the wait ends, drops the request as
 * without the window.
 */
/**
 * `malformed`: 200 with a body that is not JSON; `schema`: 200 with JSON of the wrong shape;
 * `page` (read routes only): 200 with the fault's `page` as the JSON body, whatever it is (a page of
 * hostile records, a wrong type, deep nesting), so a test can hand a client any body it makes;
 * `oversize` (read routes only): 200 with the normal page, syntactically valid, whose items
 * carry a `padding` string making the body `bytes` long (at least the page itself), streamed in
 * chunks as the client reads, with a `Content-Length` only when `contentLength` is true. It is
 * recorded once the body ended or the client left, with `bodyBytes` and `bytesSent`.
 * The hostile pagination of Stripe-style lists (rates route only), each a well-formed 200:
 * - `loop`: the page that ends with the `starting_after` item (the same last item again; on a
 *   first page the normal first page), always `has_more: true`, so a client following the cursor
 *   asks for the same `starting_after` for as long as the fault lasts (give it a large `times`);
 * - `empty_page`: `data: []` with `has_more: true` (there is no last item to continue from);
 * - `overfull`: `extraItems` (default 1) more items than `limit` asked for, as far as the list has
 *   them, `has_more` true exactly when items remain after the last one sent.
 * The hostile pagination of the catalog route, each a well-formed 200 of the page asked for:
 * - `loop` (every style but `none`): a run-wide loop, not an immediate repeat. In the styles whose
 *   server names the next position (`cursor`, `next-url`, `link-header`, `search`) the page's next
 *   position is the first page's next one (the second page's), also on the last page; aim it
 *   (`position`, `afterRequests`) past the second page for A→B→A (on the second page itself it
 *   repeats that page; on a first page, or a list of one page, it changes nothing). In
 *   `page-number` and `offset` the client picks the next position, so the page carries the first
 *   page's data again and claims more (`total_pages` at least `page + 1`, `total` beyond the page);
 * - `off_origin` (`next-url` and `link-header` only; needs `url`, an origin such as
 *   `http://127.0.0.1:4011`): the next link is `url` followed by the link's own path and query, an
 *   absolute URL on another host, which a careful client refuses to follow with its credentials.
 * A catalog fault without a `style` matcher never hits a style it cannot change (`loop` skips
 * `none`, `off_origin` all but `next-url` and `link-header`), so it waits for one it can.
 */
export type FaultKind =
  | 'status'
  | 'reset'
  | 'delay'
  | 'truncate'
  | 'malformed'
  | 'schema'
  | 'page'
  | 'oversize'
  | 'loop'
  | 'empty_page'
  | 'overfull'
  | 'off_origin';

/**
 * The route a fault hits: `GET /sources/:sourceId/records`, `POST /events`, the submissions
 * routes (`POST /submissions`, `POST /submissions/:id/confirm|void`, `GET /submissions?reference=`),
 * `GET /rates`, the journal routes (`POST /journal-entries`, `POST /journal-entries/:id/void`,
 * `GET /journal-entries?reference=`), or the catalog routes (`GET /catalog/:auth/:style/items`,
 * `POST /catalog/:auth/search`).
 */
export type FaultRoute = 'records' | 'events' | 'submissions' | 'rates' | 'journal' | 'catalog';

/** Every `FaultRoute`. */
export const FAULT_ROUTES = [
  'records',
  'events',
  'submissions',
  'rates',
  'journal',
  'catalog',
] as const satisfies readonly FaultRoute[];

/** The read routes: paged answers that `serveRead` faults (records is the default route). */
export const READ_ROUTES: readonly FaultRoute[] = ['records', 'rates', 'catalog'];

/** Whether a fault on an effect route (submissions, journal) hits before the effect or after it. */
export type FaultPhase = 'before' | 'after';

/** Every `FaultKind`, e.g. for validation. */
export const FAULT_KINDS = [
  'status',
  'reset',
  'delay',
  'truncate',
  'malformed',
  'schema',
  'page',
  'oversize',
  'loop',
  'empty_page',
  'overfull',
  'off_origin',
] as const satisfies readonly FaultKind[];

/** Fault kinds valid on the events route. */
export const EVENTS_FAULT_KINDS: readonly FaultKind[] = ['status', 'reset', 'delay'];

/** Fault kinds valid on the submissions route. */
export const SUBMISSIONS_FAULT_KINDS: readonly FaultKind[] = ['status', 'reset', 'delay'];

/** Fault kinds valid on the journal route: those of the submissions route, whose machinery it shares. */
export const JOURNAL_FAULT_KINDS: readonly FaultKind[] = SUBMISSIONS_FAULT_KINDS;

/** Fault kinds only the rates route takes (the hostile pagination of its lists). */
export const LIST_FAULT_KINDS: readonly FaultKind[] = ['empty_page', 'overfull'];

/** Longest `body` of a `status` fault. */
export const MAX_FAULT_BODY_LENGTH = 2000;

/** Largest `page` of a `page` fault, in bytes of JSON. */
export const MAX_PAGE_FAULT_BYTES = 1_000_000;

/** Largest body of an `oversize` fault (`bytes`). */
export const MAX_OVERSIZE_BYTES = 200_000_000;

/** Longest wait of a `delay` fault, and longest late-effect window (`lateEffectMs`). */
export const MAX_DELAY_MS = 600_000;

/** Most surplus items of an `overfull` fault (`extraItems`). */
export const MAX_EXTRA_ITEMS = 1000;
