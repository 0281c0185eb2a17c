import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ActiveFault, FaultInjector } from './faults.ts';
import { HttpError, jsonBytes, sendJson } from './http-io.ts';
import type { Ledger, LedgerInput } from './ledger.ts';
import { sendOversizePage } from './oversize.ts';
import { buildPage, decodeCursor, isValidDate, type RecordsPage } from './records.ts';

/** Absolute ceiling of `?limit=`; the effective page size is also clamped to `maxPageSize`. */
export const MAX_LIMIT = 500;

/** What the records route needs from the server. */
export interface RecordsContext {
  ledger: Ledger;
  faults: FaultInjector;
  recordCount: (sourceId: string, date: string) => number;
  maxPageSize: number;
  /** Resolves true after `ms`, or false as soon as the server closes (timers must not outlive it). */
  delay: (ms: number) => Promise<boolean>;
  /** True once the partner itself is shutting down (its sockets closing are not clients leaving). */
  isClosing: () => boolean;
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

/** How the wait of a `delay` fault ended. */
export interface DelayEnd {
  /** False when the partner closed during the wait. */
  fired: boolean;
  /**
   * Whether the client left during the wait: `stayed`; `dropped` (its 499 `client_closed` entry is
   * recorded); `late` (it left within the late-effect window: nothing is recorded yet, the caller
   * processes the request and records its 499 entry).
   */
  client: 'stayed' | 'dropped' | 'late';
}

/**
 * Waits out a `delay` fault of `ms`. A client that gives up while we hang (a timeout, a cancelled
 * run) is recorded when it leaves, as a 499 `client_closed` entry: tests see the abort reach the
 * partner. With `lateEffectMs` > 0, a client leaving at most that long before the wait ends is
 * left to the caller (`late`), which decides what a late effect is. The caller still completes
 * the work afterwards.
 */
export async function delayFault(
  res: ServerResponse,
  entry: LedgerInput,
  ctx: Pick<RecordsContext, 'ledger' | 'delay' | 'isClosing'>,
  ms: number,
  lateEffectMs = 0,
): Promise<DelayEnd> {
  const endsAt = performance.now() + ms;
  let client: DelayEnd['client'] = 'stayed';
  const onClientGone = () => {
    if (ctx.isClosing() || res.writableEnded) return;
    if (lateEffectMs > 0 && endsAt - performance.now() <= lateEffectMs) {
      client = 'late';
      return;
    }
    client = 'dropped';
    ctx.ledger.record({ ...entry, status: 499, fault: 'client_closed' });
  };
  res.once('close', onClientGone);
  try {
    const fired = await ctx.delay(ms);
    return { fired, client };
  } finally {
    res.off('close', onClientGone);
  }
}

/** Computes the normal (unfaulted) response: 200 with a page, or 400 with `{ error, message }`. */
function evaluate(
  query: URLSearchParams,
  sourceId: string,
  ctx: RecordsContext,
): { status: number; body: unknown; page?: RecordsPage } {
  try {
    const page = firstPage(query, sourceId, ctx);
    return { status: 200, body: page, page };
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return { status: error.status, body: { error: error.code, message: error.message } };
  }
}

/**
 * Sends the normal response; for `truncate` its headers and half its body, then kills the socket;
 * for `oversize` a page padded to the fault's `bytes`, streamed, and recorded once the body ended
 * or the client left, so the entry can tell which (an error answer is sent as it is).
 */
async function respond(
  res: ServerResponse,
  query: URLSearchParams,
  sourceId: string,
  entry: LedgerInput,
  ctx: RecordsContext,
  fault: ActiveFault | undefined,
): Promise<void> {
  const { status, body, page } = evaluate(query, sourceId, ctx);
  if (fault?.kind === 'oversize' && page) {
    const sent = await sendOversizePage(res, page, fault.bytes ?? 0, fault.contentLength ?? false);
    ctx.ledger.record({ ...entry, status, fault: fault.kind, ...sent });
    return;
  }
  if (fault?.kind !== 'truncate') {
    ctx.ledger.record({ ...entry, status, ...(fault ? { fault: fault.kind } : {}) });
    // A delayed response may find its client gone; the partner still did the work (it is recorded).
    if (!res.destroyed) sendJson(res, status, body);
    return;
  }
  ctx.ledger.record({ ...entry, status: 0, fault: fault.kind });
  const bytes = jsonBytes(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(bytes.length),
  });
  res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => res.socket?.destroy());
}

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
  const kind = fault?.kind;
  switch (kind) {
    case undefined:
    case 'truncate':
    case 'oversize':
      return respond(res, query, sourceId, entry, ctx, fault);
    case 'delay':
      // Cancelled by close(): the request was never served, so it leaves no ledger entry.
      if ((await delayFault(res, entry, ctx, fault?.delayMs ?? 0)).fired)
        await respond(res, query, sourceId, entry, ctx, fault);
      return;
    case 'reset':
      ctx.ledger.record({ ...entry, status: 0, fault: kind });
      req.socket.resetAndDestroy();
      return;
    case 'status': {
      const status = fault?.status ?? 503;
      ctx.ledger.record({ ...entry, status, fault: kind });
      const headers: Record<string, string> = fault?.retryAfter ? { 'retry-after': fault.retryAfter } : {};
      const message = fault?.body ?? `injected status ${status}`;
      sendJson(res, status, { error: 'injected_fault', message }, headers);
      return;
    }
    case 'malformed':
      ctx.ledger.record({ ...entry, status: 200, fault: kind });
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.end('{"records": [{"id": "x"}, ');
      return;
    case 'schema':
      ctx.ledger.record({ ...entry, status: 200, fault: kind });
      sendJson(res, 200, { items: [{ identifier: 1 }], next: 42 });
      return;
    default: {
      const unknownKind: never = kind;
      throw new Error(`unhandled fault kind ${String(unknownKind)}`);
    }
  }
}
