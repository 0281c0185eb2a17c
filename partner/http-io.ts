import type { IncomingMessage, ServerResponse } from 'node:http';

const MAX_BODY_BYTES = 64 * 1024;

/** A client error answered as `{ error, message }` with `status`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** Serialises a JSON body once, so a response and its truncated variant share the same bytes. */
export function jsonBytes(body: unknown): Buffer {
  return Buffer.from(JSON.stringify(body), 'utf8');
}

/** Sends a complete JSON response. Side effect: writes and ends `res`. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const bytes = jsonBytes(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(bytes.length),
    ...headers,
  });
  res.end(bytes);
}

/** Sends `{ error, message }` for an `HttpError`. */
export function sendError(res: ServerResponse, error: HttpError): void {
  sendJson(res, error.status, { error: error.code, message: error.message });
}

/**
 * Reads and parses a JSON request body (at most 64 KiB; empty = `{}`).
 * Throws `HttpError` 413 `body_too_large` or 400 `invalid_json`.
 */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'body_too_large', 'request body over 64 KiB');
    chunks.push(buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new HttpError(400, 'invalid_json', `body is not valid JSON: ${(error as Error).message}`);
  }
}
