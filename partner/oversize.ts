// The `oversize` fault's body: a real page (of records, of rates) made huge with padding, written
// chunk by chunk as the client takes it, so the partner never holds the whole body in memory.
import type { ServerResponse } from 'node:http';

/** One chunk of padding, shared by every write (the partner never builds the padding as a string). */
const PADDING = Buffer.alloc(64 * 1024, 'x');
/** Stands in for a padding string while the page is serialised; never occurs in partner data. */
const MARK = '\u0000padding\u0000';
/** How MARK looks inside JSON text, quotes left out (they stay in the fixed parts). */
const MARK_IN_JSON = JSON.stringify(MARK).slice(1, -1);

/** The body as fixed JSON parts with a run of padding characters after each but the last. */
interface Layout {
  parts: Buffer[];
  padding: number[];
  bodyBytes: number;
}

/** `page` with a `padding` mark in every item, or in the page itself when it has no items. */
function markPage(page: object, itemsKey: string | null): object {
  const pad = (items: object[]) => items.map((item) => ({ ...item, padding: MARK }));
  // A bare array page stays an array: with no items to pad, one item of padding alone carries it.
  if (itemsKey === null)
    return Array.isArray(page) && page.length > 0 ? pad(page as object[]) : [{ padding: MARK }];
  const items: unknown = (page as Record<string, unknown>)[itemsKey];
  return Array.isArray(items) && items.length > 0
    ? { ...page, [itemsKey]: pad(items as object[]) }
    : { ...page, padding: MARK };
}

/**
 * Lays `page` out at `bytes` bytes: every item of its `itemsKey` array (objects; the page itself
 * when `itemsKey` is null) gets a `padding` string (the page, when it has no items), their lengths
 * sharing what the page lacks. Pure. A page already longer than `bytes` keeps empty paddings.
 */
export function layoutOversizePage(page: object, itemsKey: string | null, bytes: number): Layout {
  const marked = markPage(page, itemsKey);
  const parts = JSON.stringify(marked)
    .split(MARK_IN_JSON)
    .map((text) => Buffer.from(text, 'utf8'));
  const fixed = parts.reduce((n, p) => n + p.length, 0);
  const runs = parts.length - 1;
  const total = Math.max(0, bytes - fixed);
  const padding = Array.from(
    { length: runs },
    (_, i) => Math.floor(total / runs) + (i < total % runs ? 1 : 0),
  );
  return { parts, padding, bodyBytes: fixed + total };
}

function* chunks({ parts, padding }: Layout): Generator<Buffer> {
  for (const [i, part] of parts.entries()) {
    yield part;
    for (let left = padding[i] ?? 0; left > 0; left -= PADDING.length) {
      yield left >= PADDING.length ? PADDING : PADDING.subarray(0, left);
    }
  }
}

/** Resolves on the next `drain`, or at once-ish when the response closes (a gone client never drains). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/**
 * Sends `page` as a 200 of about `size.bytes` bytes with `headers`, its `itemsKey` items padded
 * (see {@link layoutOversizePage}), its length announced only with `size.contentLength`, honouring
 * backpressure, and stops as soon as the client is gone. Resolves with the body's size and the
 * body bytes handed to the connection (at most one chunk more than the socket took). Side effect:
 * writes and ends `res`; never rejects.
 */
export async function sendOversizePage(
  res: ServerResponse,
  page: object,
  itemsKey: string | null,
  size: { bytes: number; contentLength: boolean },
  headers: Record<string, string> = {},
): Promise<{ bodyBytes: number; bytesSent: number }> {
  const layout = layoutOversizePage(page, itemsKey, size.bytes);
  res.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    ...(size.contentLength ? { 'content-length': String(layout.bodyBytes) } : {}),
    ...headers,
  });
  let bytesSent = 0;
  for (const chunk of chunks(layout)) {
    if (res.destroyed) break;
    bytesSent += chunk.length;
    if (!res.write(chunk)) await drained(res);
  }
  if (!res.destroyed) res.end();
  return { bodyBytes: layout.bodyBytes, bytesSent };
}
