/**
 * The HTTP client activities use for partner calls: connect and response timeouts from config,
 * cancellation through the caller's AbortSignal, bounded JSON bodies, a send deadline for
 * non-idempotent calls, and failures mapped to DESIGN error types. Response bodies of failed calls
 * are drained (undici stops at 128 KiB) and dropped, never put into messages (R11).
 */
import { Agent, type Dispatcher, request } from 'undici';
import { classify, failure, httpStatusFailure } from './errors.ts';
import { DEFAULT_MAX_RESPONSE_BYTES } from './http-limits.ts';
import { SendDeadlineHandler } from './send-deadline.ts';

export { DEFAULT_MAX_RESPONSE_BYTES };

export interface HttpClientOptions {
  /** Max time to establish a TCP connection. */
  connectTimeoutMs: number;
  /** Max time to wait for the response headers, and then between body chunks. */
  responseTimeoutMs: number;
  /**
   * Most bytes read of a response body (default {@link DEFAULT_MAX_RESPONSE_BYTES}). A partner may
   * send anything: a larger body is refused on its `Content-Length`, or as soon as the count passes
   * the cap, and never held in memory whole.
   */
  maxResponseBytes?: number;
}

/** Options of every call. */
export interface RequestOptions {
  signal: AbortSignal;
  headers?: Record<string, string>;
  /** What the call is, for failure messages (never a URL: it may carry secrets). */
  what: string;
  /** Most bytes read of this response's body: the client's `maxResponseBytes` or less. */
  maxResponseBytes?: number;
  /**
   * A rate-limit reset header the partner names (e.g. `X-RateLimit-Reset`), read on a 429 or 503
   * without `Retry-After`: `seconds` to wait, or the `epoch` second the limit resets at. Its wait is
   * clamped by the retry preset like Retry-After's.
   */
  rateLimitReset?: RateLimitReset;
}

/** How a partner says when its rate limit resets. */
export interface RateLimitReset {
  header: string;
  unit: 'seconds' | 'epoch';
}

/** A JSON response with its headers (header names in lower case). */
export interface JsonResponse {
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}

/** Options of a POST. */
export interface PostOptions extends RequestOptions {
  /**
   * A `performance.now()` instant: when the request has not started being written to its socket
   * by then, it is aborted unsent. For non-idempotent calls whose caller may only send within a
   * window (e.g. before another attempt may take over): "not sent" is then a certainty, not a guess.
   */
  sendBy?: number;
}

export interface HttpClient {
  /**
   * GETs `url` and returns the parsed JSON body of a 2xx response. Not idempotent by itself:
   * callers send an `Idempotency-Key` header where the partner supports one.
   * @throws ApplicationFailure typed per status (429 RateLimited, 5xx UpstreamUnavailable, …),
   *   Timeout, NetworkError, InvalidResponse (`INVALID_JSON`: body is not JSON;
   *   `RESPONSE_TOO_LARGE`: body over `maxResponseBytes`); the signal's reason when aborted.
   */
  getJson(url: URL, opts: RequestOptions): Promise<unknown>;
  /**
   * POSTs `body` as JSON to `url` and returns the parsed JSON response of a 2xx (or null when the
   * body is empty or not JSON: the status is the acknowledgement). Not idempotent by itself:
   * callers send an `Idempotency-Key` the receiver dedupes on.
   * @throws as {@link HttpClient.getJson} (except `INVALID_JSON`), and Timeout
   *   `SEND_DEADLINE_PASSED` when `sendBy` passed before the request was written: nothing was sent.
   */
  postJson(url: URL, body: unknown, opts: PostOptions): Promise<unknown>;
  /**
   * GETs `url`, or POSTs `body` as JSON to it, and returns the parsed JSON body of a 2xx with the
   * response's headers (for partners that page through a `Link` header). A read: callers use it
   * for requests that change nothing at the partner.
   * @throws as {@link HttpClient.getJson}.
   */
  readJson(
    url: URL,
    opts: RequestOptions & { method?: 'GET' | 'POST'; body?: unknown },
  ): Promise<JsonResponse>;
  /** The options this client was created with (callers that bound a call's effects need its timeouts). */
  readonly options: HttpClientOptions;
  close(): Promise<void>;
}

/**
 * The wait a refusal asks for, as a Retry-After value: the header itself, else the partner's named
 * reset header turned into delta-seconds (an epoch second in the past means now).
 */
function retryAfterOf(
  headers: JsonResponse['headers'],
  reset: RateLimitReset | undefined,
  nowMs: number = Date.now(),
): string | undefined {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const retryAfter = first(headers['retry-after']);
  if (retryAfter !== undefined || reset === undefined) return retryAfter;
  const value = first(headers[reset.header.toLowerCase()])?.trim();
  if (value === undefined || !/^\d{1,12}$/.test(value)) return undefined;
  const seconds =
    reset.unit === 'seconds' ? Number(value) : Math.max(0, Number(value) - Math.floor(nowMs / 1000));
  return String(seconds);
}

function tooLarge(what: string, max: number, declared?: number): Error {
  const announced = declared === undefined ? '' : ` (Content-Length ${declared})`;
  return failure(
    'InvalidResponse',
    'RESPONSE_TOO_LARGE',
    `${what}: response body larger than ${max} bytes${announced}`,
  );
}

/**
 * Reads a body as UTF-8 text of at most `max` bytes. Refuses at once when `Content-Length` says
 * more; otherwise counts while reading and destroys the body (aborting the request, so the socket
 * is closed and the partner stops sending) as soon as the count passes `max`.
 */
async function readCapped(res: Dispatcher.ResponseData, max: number, what: string): Promise<string> {
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) {
    res.body.destroy();
    throw tooLarge(what, max, declared);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > max) {
      res.body.destroy();
      throw tooLarge(what, max);
    }
    chunks.push(buffer);
  }
  return new TextDecoder('utf-8').decode(Buffer.concat(chunks, size));
}

/** Creates a client with its own connection pool; close it on shutdown. */
export function createHttpClient(options: HttpClientOptions): HttpClient {
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const agent = new Agent({
    connect: { timeout: options.connectTimeoutMs },
    headersTimeout: options.responseTimeoutMs,
    bodyTimeout: options.responseTimeoutMs,
  });
  // The deadline is per request: a composed view of the shared pool, not a pool of its own.
  const dispatcherFor = (sendBy: number | undefined, what: string): Dispatcher =>
    sendBy === undefined
      ? agent
      : agent.compose(
          (dispatch) => (opts, handler) => dispatch(opts, new SendDeadlineHandler(handler, sendBy, what)),
        );
  // Sends one request; resolves with the body text of a 2xx, throws a typed failure otherwise.
  const send = async (
    url: URL,
    init: { method: 'GET' | 'POST'; body?: string; headers?: Record<string, string> },
    opts: { signal: AbortSignal; what: string; sendBy?: number } & Omit<RequestOptions, 'headers'>,
  ): Promise<{ text: string; headers: JsonResponse['headers'] }> => {
    const { signal, what, sendBy } = opts;
    try {
      const res = await request(url, { ...init, signal, dispatcher: dispatcherFor(sendBy, what) });
      if (res.statusCode < 200 || res.statusCode >= 300) {
        await res.body.dump();
        throw httpStatusFailure(res.statusCode, what, retryAfterOf(res.headers, opts.rateLimitReset));
      }
      const cap = Math.min(maxBytes, opts.maxResponseBytes ?? maxBytes);
      return { text: await readCapped(res, cap, what), headers: res.headers };
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw classify(err, what);
    }
  };
  const readJson: HttpClient['readJson'] = async (url, opts) => {
    const { headers, method = 'GET', body, ...rest } = opts;
    const init =
      method === 'POST'
        ? {
            method,
            body: JSON.stringify(body ?? null),
            headers: { 'content-type': 'application/json', ...headers },
          }
        : { method, ...(headers ? { headers } : {}) };
    const res = await send(url, init, rest);
    try {
      return { body: JSON.parse(res.text) as unknown, headers: res.headers };
    } catch {
      throw failure('InvalidResponse', 'INVALID_JSON', `${opts.what}: response body is not JSON`);
    }
  };
  return {
    async getJson(url, opts) {
      return (await readJson(url, { ...opts, method: 'GET' })).body;
    },
    readJson,
    async postJson(url, body, { signal, headers, what, sendBy }) {
      const { text } = await send(
        url,
        {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json', ...headers },
        },
        { signal, what, ...(sendBy === undefined ? {} : { sendBy }) },
      );
      try {
        return text === '' ? null : (JSON.parse(text) as unknown);
      } catch {
        return null;
      }
    },
    options,
    close: () => agent.close(),
  };
}
