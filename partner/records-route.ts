import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FaultInjector } from './faults.ts';
import { HttpError, sendJson } from './http-io.ts';
import type { DelayContext } from './delay-fault.ts';
import type { LedgerInput } from './ledger.ts';
import { type ReadShape, serveRead } from './read-route.ts';
import { buildPage, decodeCursor, isValidDate, type RecordsPage } from './records.ts';

/** Absolute ceiling of `?limit=`; the effective page size is also clamped to `maxPageSize`. */
export const MAX_LIMIT = 500;

/** What the records route needs from the server. */
export interface RecordsContext extends DelayContext {
  faults: FaultInjector;
  recordCount: (sourceId: string, date: string) => number;
  maxPageSize: number;
}

function firstPage(query: URLSearchParams, sourceId: string, ctx: RecordsContext): RecordsPage {
  const date = query.get('date');
  if (date === null || !isValidDate(date)) {
    throw new HttpError(400, 'invalid_date', '"date" must be a calendar date written YYYY-MM-DD');
  }
  const rawLimit = query.get('limit');
  const limit = rawLimit === null ? ctx.maxPageSize : Number(rawLimit);
  if (rawLimit !== null && (!/^\d{1,3}$/.test(rawLimit) || limit < 1 || limit > MAX_LIMIT)) {
    throw new HttpError(400, 'invalid_limit', `"limit" must be an integer in 1..${MAX_LIMIT}`);
  }
  const total = Math.max(0, Math.floor(ctx.recordCount(sourceId, date)));
  const cursor = query.get('cursor');
  const fromSeq = cursor === null ? 1 : decodeCursor(cursor, total);
  if (fromSeq === undefined) {
    throw new HttpError(400, 'invalid_cursor', '"cursor" is not a cursor this partner issued for this date');
  }
  return buildPage(sourceId, date, fromSeq, Math.min(limit, ctx.maxPageSize), total);
}

/** How the records route's faulted bodies look. */
const RECORDS_SHAPE: ReadShape = {
  itemsKey: 'records',
  malformedBody: '{"records": [{"id": "x"}, ',
  schemaBody: { items: [{ identifier: 1 }], next: 42 },
};

/**
 * Serves `GET /sources/:sourceId/records?date=…[&cursor=…][&limit=n]`, applying at most one
 * injected fault. Side effects: consumes the fault, appends exactly one ledger entry per request
 * that is answered (or deliberately failed); a delayed request cancelled by `close()` leaves none.
 * An `oversize` answer is recorded when its body ended or its client left (`bytesSent`).
 */
export async function handleRecords(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  sourceId: string,
  ctx: RecordsContext,
): Promise<void> {
  const query = url.searchParams;
  const date = query.get('date');
  const cursor = query.get('cursor');
  const idempotencyKey = req.headers['idempotency-key'];
  const entry: LedgerInput = {
    method: req.method ?? 'GET',
    path: url.pathname,
    sourceId,
    ...(date === null ? {} : { date }),
    cursor,
    status: 0,
    ...(typeof idempotencyKey === 'string' ? { idempotencyKey } : {}),
    auth: req.headers.authorization !== undefined,
  };
  if (req.method !== 'GET') {
    ctx.ledger.record({ ...entry, status: 405 });
    sendJson(res, 405, { error: 'method_not_allowed', message: 'use GET' }, { allow: 'GET' });
    return;
  }
  const fault = ctx.faults.take({ route: 'records', sourceId, date, cursor });
  await serveRead(req, res, entry, ctx, fault, RECORDS_SHAPE, () => {
    const page = firstPage(query, sourceId, ctx);
    return { status: 200, body: page, page };
  });
}
