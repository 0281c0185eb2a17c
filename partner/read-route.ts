// What the read routes (records, rates, catalog) share: applying one injected fault to a paged answer.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type DelayContext, delayFault } from './delay-fault.ts';
import type { ActiveFault } from './faults.ts';
import { HttpError, jsonBytes, sendJson } from './http-io.ts';
import type { LedgerInput } from './ledger.ts';
import { sendOversizePage } from './oversize.ts';

/** A read route's answer: 200 with a page, or an error with `{ error, message }`. */
export interface ReadAnswer {
  status: number;
  body: unknown;
  /** The page itself on a 200 (what `oversize` pads); absent on an error answer. */
  page?: object;
  /** Headers the answer carries besides its content type and length (e.g. a `Link` header). */
  headers?: Record<string, string>;
}

/** What tells one read route's faulted bodies from another's. */
export interface ReadShape {
  /** Key of the page's item array (`records`, `data`), null when the page is the array: the items `oversize` pads. */
  itemsKey: string | null;
  /** Body of a `malformed` fault: the start of a page, cut off so it is not JSON. */
  malformedBody: string;
  /** Body of a `schema` fault: JSON of a shape the route never serves. */
  schemaBody: unknown;
}

/**
 * The headers of a `status` fault: `Retry-After`, and the rate-limit pair when it has a
 * `rateLimitReset` (see `FaultKind`). Reads the clock.
 */
function statusHeaders(fault: ActiveFault): Record<string, string> {
  const headers: Record<string, string> = fault.retryAfter ? { 'retry-after': fault.retryAfter } : {};
  if (fault.rateLimitReset === undefined) return headers;
  // Rounded up, so a client waiting until that second has waited at least the seconds promised.
  const reset =
    fault.rateLimitResetStyle === 'seconds'
      ? fault.rateLimitReset
      : Math.ceil(Date.now() / 1000 + fault.rateLimitReset);
  return { ...headers, 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) };
}

/**
 * Runs `compute` and turns an `HttpError` it throws into its error answer, so a request that
 * a fault delays is validated when it is finally served. Throws anything else (a bug).
 */
export function answerOf(compute: () => ReadAnswer): ReadAnswer {
  try {
    return compute();
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return { status: error.status, body: { error: error.code, message: error.message } };
  }
}

/**
 * Sends the answer; for `truncate` its headers and half its body, then kills the socket; for
 * `oversize` a page padded to the fault's `bytes`, streamed, and recorded once the body ended or
 * the client left, so the entry can tell which (an error answer is sent as it is).
 */
async function respond(
  res: ServerResponse,
  entry: LedgerInput,
  ctx: DelayContext,
  fault: ActiveFault | undefined,
  shape: ReadShape,
  compute: () => ReadAnswer,
): Promise<void> {
  const { status, body, page, headers = {} } = answerOf(compute);
  if (fault?.kind === 'oversize' && page) {
    const size = { bytes: fault.bytes ?? 0, contentLength: fault.contentLength ?? false };
    const sent = await sendOversizePage(res, page, shape.itemsKey, size, headers);
    ctx.ledger.record({ ...entry, status, fault: fault.kind, ...sent });
    return;
  }
  if (fault?.kind !== 'truncate') {
    ctx.ledger.record({ ...entry, status, ...(fault ? { fault: fault.kind } : {}) });
    // A delayed response may find its client gone; the partner still did the work (it is recorded).
    if (!res.destroyed) sendJson(res, status, body, headers);
    return;
  }
  ctx.ledger.record({ ...entry, status: 0, fault: fault.kind });
  const bytes = jsonBytes(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(bytes.length),
    ...headers,
  });
  res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => res.socket?.destroy());
}

/**
 * Answers a read request under at most one fault (see `FaultKind`). `compute` builds the answer
 * when it is due (after a delay: from the state then) and may throw `HttpError` for a client
 * error; the list kinds (`loop`, `empty_page`, `overfull`, `off_origin`) are the caller's to build
 * there, this sends what it built (with its headers). Side effects: appends exactly one ledger entry (`entry` with its status and
 * fault) per request answered or deliberately failed; a delay cancelled by `close()` leaves none.
 */
export async function serveRead(
  req: IncomingMessage,
  res: ServerResponse,
  entry: LedgerInput,
  ctx: DelayContext,
  fault: ActiveFault | undefined,
  shape: ReadShape,
  compute: () => ReadAnswer,
): Promise<void> {
  const kind = fault?.kind;
  switch (kind) {
    case undefined:
    case 'truncate':
    case 'oversize':
    case 'loop':
    case 'empty_page':
    case 'overfull':
    case 'off_origin':
      return respond(res, entry, ctx, fault, shape, compute);
    case 'delay':
      // Cancelled by close(): the request was never served, so it leaves no ledger entry.
      if ((await delayFault(res, entry, ctx, fault?.delayMs ?? 0)).fired)
        await respond(res, entry, ctx, fault, shape, compute);
      return;
    case 'reset':
      ctx.ledger.record({ ...entry, status: 0, fault: kind });
      req.socket.resetAndDestroy();
      return;
    case 'status': {
      // A slow error waits first, as `delay` does; cancelled by close(), it leaves no ledger entry.
      if (fault?.delayMs !== undefined && !(await delayFault(res, entry, ctx, fault.delayMs)).fired) return;
      const status = fault?.status ?? 503;
      ctx.ledger.record({ ...entry, status, fault: kind });
      const headers = fault ? statusHeaders(fault) : {};
      const message = fault?.body ?? `injected status ${status}`;
      if (!res.destroyed) sendJson(res, status, { error: 'injected_fault', message }, headers);
      return;
    }
    case 'malformed':
      ctx.ledger.record({ ...entry, status: 200, fault: kind });
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.end(shape.malformedBody);
      return;
    case 'schema':
      ctx.ledger.record({ ...entry, status: 200, fault: kind });
      sendJson(res, 200, shape.schemaBody);
      return;
    case 'page':
      ctx.ledger.record({ ...entry, status: 200, fault: kind });
      sendJson(res, 200, fault?.page ?? null);
      return;
    default: {
      const unknownKind: never = kind;
      throw new Error(`unhandled fault kind ${String(unknownKind)}`);
    }
  }
}
