import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerAuthorized } from './auth.ts';
import type { DelayContext } from './delay-fault.ts';
import type { ActiveFault, FaultInjector } from './faults.ts';
import { HttpError, sendJson } from './http-io.ts';
import type { LedgerInput } from './ledger.ts';
import {
  buildRatesPage,
  DEFAULT_RATES_LIMIT,
  indexOfRate,
  MAX_RATE_PAIRS,
  MAX_RATES_LIMIT,
  type RatesPage,
} from './rates.ts';
import { type ReadAnswer, type ReadShape, serveRead } from './read-route.ts';
import { isValidDate } from './records.ts';

/** Path of `GET /rates`. */
export const RATES_PATH = '/rates';

/** What the rates route needs from the server. */
export interface RatesContext extends DelayContext {
  faults: FaultInjector;
  /** Number of pairs listed for a date (clamped to 0..{@link MAX_RATE_PAIRS}). */
  ratePairCount: (date: string) => number;
  /** The bearer token required; undefined = any non-empty bearer token is accepted. */
  ratesToken: string | undefined;
}

/** How the rates route's faulted bodies look. */
const RATES_SHAPE: ReadShape = {
  itemsKey: 'data',
  malformedBody: '{"object": "list", "data": [{"id": "EURUSD", ',
  schemaBody: { object: 'list', items: [{ pair: 'EUR/USD', rate: 1.08 }], more: 'yes' },
};

/** A validated list request: the date, where its page starts, its size, the list's length. */
interface ListRequest {
  date: string;
  /** Position (0-based) of the page's first pair. */
  from: number;
  limit: number;
  total: number;
}

function listRequest(query: URLSearchParams, ctx: RatesContext): ListRequest {
  const date = query.get('date');
  if (date === null || !isValidDate(date)) {
    throw new HttpError(400, 'invalid_date', '"date" must be a calendar date written YYYY-MM-DD');
  }
  const rawLimit = query.get('limit');
  const limit = rawLimit === null ? DEFAULT_RATES_LIMIT : Number(rawLimit);
  if (rawLimit !== null && (!/^\d{1,4}$/.test(rawLimit) || limit < 1 || limit > MAX_RATES_LIMIT)) {
    throw new HttpError(400, 'invalid_limit', `"limit" must be an integer in 1..${MAX_RATES_LIMIT}`);
  }
  const total = Math.max(0, Math.min(MAX_RATE_PAIRS, Math.floor(ctx.ratePairCount(date))));
  const startingAfter = query.get('starting_after');
  if (startingAfter === null) return { date, from: 0, limit, total };
  const index = indexOfRate(startingAfter, total);
  if (index === undefined) {
    throw new HttpError(
      400,
      'invalid_starting_after',
      `"starting_after": no rate ${startingAfter} on ${date}`,
    );
  }
  return { date, from: index + 1, limit, total };
}

/**
 * The page a request gets, as `fault` (a list kind, or none) shapes it; see `FaultKind` for
 * `loop`, `empty_page` and `overfull`. Pure; throws `HttpError` for an invalid request.
 */
function ratesAnswer(query: URLSearchParams, ctx: RatesContext, fault: ActiveFault | undefined): ReadAnswer {
  const { date, from, limit, total } = listRequest(query, ctx);
  let page: RatesPage;
  switch (fault?.kind) {
    case 'loop': {
      // The page ending with the `starting_after` item, so the client is sent back to it.
      const start = from === 0 ? 0 : Math.max(0, from - limit);
      const end = from === 0 ? limit : from;
      page = { ...buildRatesPage(date, start, end - start, total), has_more: true };
      break;
    }
    case 'empty_page':
      page = { object: 'list', data: [], has_more: true };
      break;
    case 'overfull':
      page = buildRatesPage(date, from, limit + (fault.extraItems ?? 1), total);
      break;
    default:
      page = buildRatesPage(date, from, limit, total);
  }
  return { status: 200, body: page, page };
}

/**
 * Serves `GET /rates?date=YYYY-MM-DD[&limit=1..100 (default 10)][&starting_after=<id>]`, a
 * Stripe-style list `{ object: "list", data: Rate[], has_more }` of the date's pairs in a fixed
 * order; the next page is asked for with `starting_after` = the last item's id. Needs
 * `Authorization: Bearer <token>` (else 401 `unauthorized`, before any fault is consulted); 400
 * `invalid_date`, `invalid_limit` (above 100, as Stripe), `invalid_starting_after` (an id not in
 * the date's list); 405 for other methods. Applies at most one fault of route `rates` (the read
 * kinds of the records route plus `loop`, `empty_page`, `overfull`). Side effects: consumes the
 * fault, appends exactly one ledger entry (`date`, `startingAfter`, status, fault) per request
 * answered or deliberately failed; a delay cancelled by `close()` leaves none.
 */
export async function handleRates(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  ctx: RatesContext,
): Promise<void> {
  const query = url.searchParams;
  const date = query.get('date');
  const startingAfter = query.get('starting_after');
  const idempotencyKey = req.headers['idempotency-key'];
  const entry: LedgerInput = {
    method: req.method ?? 'GET',
    path: url.pathname,
    ...(date === null ? {} : { date }),
    startingAfter,
    status: 0,
    ...(typeof idempotencyKey === 'string' ? { idempotencyKey } : {}),
    auth: req.headers.authorization !== undefined,
  };
  if (req.method !== 'GET') {
    ctx.ledger.record({ ...entry, status: 405 });
    sendJson(res, 405, { error: 'method_not_allowed', message: 'use GET' }, { allow: 'GET' });
    return;
  }
  if (!bearerAuthorized(req.headers.authorization, ctx.ratesToken)) {
    ctx.ledger.record({ ...entry, status: 401 });
    const message = 'send "Authorization: Bearer <token>" with the partner\'s token';
    sendJson(res, 401, { error: 'unauthorized', message }, { 'www-authenticate': 'Bearer' });
    return;
  }
  const fault = ctx.faults.take({ route: 'rates', date, startingAfter });
  await serveRead(req, res, entry, ctx, fault, RATES_SHAPE, () => ratesAnswer(query, ctx, fault));
}
