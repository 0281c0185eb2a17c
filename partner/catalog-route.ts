import type { IncomingMessage, ServerResponse } from 'node:http';
import { CATALOG_AUTH_KINDS, type CatalogAuth, checkCatalogCredential } from './auth.ts';
import { CATALOG_STYLES, type CatalogStyle, POSITION_PARAM } from './catalog.ts';
import { CATALOG_SHAPES, catalogAnswer, type CatalogRequest } from './catalog-pages.ts';
import type { DelayContext } from './delay-fault.ts';
import type { FaultInjector } from './faults.ts';
import { HttpError, readJsonBody, sendError, sendJson } from './http-io.ts';
import type { LedgerInput } from './ledger.ts';
import { serveRead } from './read-route.ts';

/** Prefix of every catalog route. */
export const CATALOG_PREFIX = '/catalog/';

/** What the catalog routes need from the server. */
export interface CatalogContext extends DelayContext {
  faults: FaultInjector;
  /** The token every auth kind wants (`basic`: as the password of user `demo`). */
  catalogToken: string;
  /** The catalog's record count for a date. */
  catalogRecordCount: (date: string) => number;
}

const ROUTE = /^\/catalog\/([^/]+)\/(?:([^/]+)\/items|search)$/;
/** A Host header fit to build a link from (anything else falls back to the socket's address). */
const HOST = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;

/** The auth kind and style a catalog path names. Throws `HttpError` 404 for any other path. */
function parsePath(pathname: string): { auth: CatalogAuth; style: CatalogStyle } {
  const match = ROUTE.exec(pathname);
  const auth = CATALOG_AUTH_KINDS.find((kind) => kind === match?.[1]);
  const style = match?.[2] === undefined ? 'search' : CATALOG_STYLES.find((s) => s === match[2]);
  if (!match || auth === undefined || style === undefined || (match[2] !== undefined && style === 'search')) {
    throw new HttpError(404, 'not_found', `no catalog route ${pathname}`);
  }
  return { auth, style };
}

/** `http://host:port` as the client addressed the partner. */
function originOf(req: IncomingMessage): string {
  const host = req.headers.host;
  if (host !== undefined && HOST.test(host)) return `http://${host}`;
  const address = req.socket.localAddress ?? '127.0.0.1';
  return `http://${address.includes(':') ? `[${address}]` : address}:${req.socket.localPort}`;
}

/**
 * The search body `{ date, limit?, cursor? }` as paging parameters. Throws `HttpError` 400
 * (`invalid_json`, `invalid_body`, `invalid_date`, `invalid_limit`, `invalid_cursor` for a wrong type).
 */
async function searchQuery(req: IncomingMessage): Promise<URLSearchParams> {
  const body = await readJsonBody(req);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError(400, 'invalid_body', 'the body must be a JSON object { date, limit?, cursor? }');
  }
  const { date, limit, cursor } = body as Record<string, unknown>;
  const query = new URLSearchParams();
  if (typeof date === 'string') query.set('date', date);
  if (typeof limit === 'number' && Number.isInteger(limit)) query.set('limit', String(limit));
  else if (limit !== undefined && limit !== null)
    throw new HttpError(400, 'invalid_limit', '"limit" must be an integer');
  if (typeof cursor === 'string') query.set('cursor', cursor);
  else if (cursor !== undefined && cursor !== null)
    throw new HttpError(400, 'invalid_cursor', '"cursor" must be a string');
  return query;
}

/** The 401 of each auth kind: what to send, and the challenge header when the scheme has one. */
const REFUSALS: Record<CatalogAuth, { message: string; challenge?: string }> = {
  bearer: { message: 'send "Authorization: Bearer <token>"', challenge: 'Bearer' },
  'api-key': { message: 'send the token as header "X-Api-Key" or query parameter "api_key"' },
  basic: { message: 'send "Authorization: Basic base64(demo:<token>)"', challenge: 'Basic realm="catalog"' },
};

/**
 * Serves the catalog: `GET /catalog/:auth/:style/items` (`:style` one of `cursor`, `next-url`,
 * `link-header`, `page-number`, `offset`, `none`; see `CATALOG_STYLES`) and `POST
 * /catalog/:auth/search`, the records of a date (`makeRecord('catalog', date, seq)`, the partner's
 * `catalogRecordCount` of them), page size 1..100 (default 25). `:auth` is `bearer`
 * (`Authorization: Bearer <token>`), `api-key` (header `X-Api-Key` or query `api_key`, never
 * carried into next links) or `basic` (`demo:<token>`); missing or wrong: 401 `unauthorized`,
 * before any fault is consulted. 400 for a bad date, page size or position; 404 for an unknown
 * auth kind or style; 405 for the other method. Applies at most one fault of route `catalog`
 * (the read kinds, `loop`, `off_origin`; see `FaultKind`). Side effects: consumes the fault and
 * appends exactly one ledger entry per request answered or deliberately failed (`style`,
 * `position`, `credential`, `authorized`; the query string, which may carry the key, never);
 * a delay cancelled by `close()` leaves none. Throws `HttpError` 404 for the caller to record.
 */
export async function handleCatalog(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  ctx: CatalogContext,
): Promise<void> {
  const { auth, style } = parsePath(url.pathname);
  const method = style === 'search' ? 'POST' : 'GET';
  const check = checkCatalogCredential(req, url.searchParams, auth, ctx.catalogToken);
  const idempotencyKey = req.headers['idempotency-key'];
  const positionName = POSITION_PARAM[style];
  let query = style === 'search' ? new URLSearchParams() : url.searchParams;
  const entryOf = (status: number): LedgerInput => {
    const date = query.get('date');
    return {
      method: req.method ?? 'GET',
      path: url.pathname,
      ...(date === null ? {} : { date }),
      style,
      position: positionName === null ? null : query.get(positionName),
      status,
      ...(typeof idempotencyKey === 'string' ? { idempotencyKey } : {}),
      auth: req.headers.authorization !== undefined,
      ...(check.credential ? { credential: check.credential } : {}),
      authorized: check.authorized,
    };
  };
  if (req.method !== method) {
    ctx.ledger.record(entryOf(405));
    sendJson(res, 405, { error: 'method_not_allowed', message: `use ${method}` }, { allow: method });
    return;
  }
  if (!check.authorized) {
    ctx.ledger.record(entryOf(401));
    const { message, challenge } = REFUSALS[auth];
    sendJson(
      res,
      401,
      { error: 'unauthorized', message },
      challenge ? { 'www-authenticate': challenge } : {},
    );
    return;
  }
  if (style === 'search') {
    try {
      query = await searchQuery(req);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      ctx.ledger.record(entryOf(error.status));
      return sendError(res, error);
    }
  }
  const entry = entryOf(0);
  const target = {
    route: 'catalog',
    style,
    date: entry.date ?? null,
    position: entry.position ?? null,
  } as const;
  const fault = ctx.faults.take(target);
  const request: CatalogRequest = {
    auth,
    style,
    query,
    origin: originOf(req),
    count: ctx.catalogRecordCount,
  };
  await serveRead(req, res, entry, ctx, fault, CATALOG_SHAPES[style], () => catalogAnswer(request, fault));
}
