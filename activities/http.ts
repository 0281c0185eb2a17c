/**
 * The HTTP client activities use for partner calls: connect and response timeouts from config,
 * cancellation through the caller's AbortSignal, JSON bodies, and failures mapped to DESIGN error
 * types. Response bodies of failed calls are drained and dropped, never put into messages (R11).
 */
import { performance } from 'node:perf_hooks';
import { Agent, type Dispatcher, request } from 'undici';
import { classify, failure, httpStatusFailure } from './errors.ts';

export interface HttpClientOptions {
  /** Max time to establish a TCP connection. */
  connectTimeoutMs: number;
  /** Max time to wait for the response headers, and then between body chunks. */
  responseTimeoutMs: number;
}

export interface HttpClient {
  /**
   * GETs `url` and returns the parsed JSON body of a 2xx response. Not idempotent by itself:
   * callers send an `Idempotency-Key` header where the partner supports one.
   * @throws ApplicationFailure typed per status (429 RateLimited, 5xx UpstreamUnavailable, …),
   *   Timeout, NetworkError, InvalidResponse (body is not JSON); the signal's reason when aborted.
   */
  getJson(
    url: URL,
    opts: { signal: AbortSignal; headers?: Record<string, string>; what: string },
  ): Promise<unknown>;
  /**
   * POSTs `body` as JSON to `url` and returns the parsed JSON response of a 2xx (or null when the
   * body is empty or not JSON: the status is the acknowledgement). Not idempotent by itself:
   * callers send an `Idempotency-Key` the receiver dedupes on. With `sendBy` (a
   * `performance.now()` instant) the request is not sent at all unless its writing to the socket
   * starts by then — checked at the last moment before it is written, after connecting.
   * @throws as {@link HttpClient.getJson}; Timeout SEND_DEADLINE_PASSED when not sent in time.
   */
  postJson(
    url: URL,
    body: unknown,
    opts: { signal: AbortSignal; headers?: Record<string, string>; what: string; sendBy?: number },
  ): Promise<unknown>;
  /** The timeouts this client was created with (callers that bound a call's effects need them). */
  readonly options: HttpClientOptions;
  close(): Promise<void>;
}

/**
 * Refuses to write a request to its socket after `deadline`: the dispatch handler's
 * `onRequestStart` is the last hook before undici writes the request line (connection
 * established, nothing sent yet), so an aborted request never reaches the server.
 */
function sendingBy(deadline: number, what: string): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) =>
    dispatch(opts, {
      onRequestStart(controller, context) {
        if (performance.now() > deadline) {
          controller.abort(
            failure('Timeout', 'SEND_DEADLINE_PASSED', `${what}: not sent (its send deadline passed)`),
          );
          return;
        }
        handler.onRequestStart?.(controller, context);
      },
      onRequestUpgrade: (...args) => handler.onRequestUpgrade?.(...args),
      onResponseStart: (...args) => handler.onResponseStart?.(...args),
      onResponseData: (...args) => handler.onResponseData?.(...args),
      onResponseEnd: (...args) => handler.onResponseEnd?.(...args),
      onResponseError: (...args) => handler.onResponseError?.(...args),
    });
}

/** Creates a client with its own connection pool; close it on shutdown. */
export function createHttpClient(options: HttpClientOptions): HttpClient {
  const agent = new Agent({
    connect: { timeout: options.connectTimeoutMs },
    headersTimeout: options.responseTimeoutMs,
    bodyTimeout: options.responseTimeoutMs,
  });
  // Sends one request; resolves with the body text of a 2xx, throws a typed failure otherwise.
  const send = async (
    url: URL,
    init: { method: 'GET' | 'POST'; body?: string; headers?: Record<string, string> },
    signal: AbortSignal,
    what: string,
    sendBy?: number,
  ): Promise<string> => {
    const dispatcher = sendBy === undefined ? agent : agent.compose(sendingBy(sendBy, what));
    try {
      const res = await request(url, { ...init, signal, dispatcher });
      if (res.statusCode < 200 || res.statusCode >= 300) {
        await res.body.dump();
        const retryAfter = res.headers['retry-after'];
        throw httpStatusFailure(res.statusCode, what, Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
      }
      return await res.body.text();
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw classify(err, what);
    }
  };
  return {
    async getJson(url, { signal, headers, what }) {
      const text = await send(url, { method: 'GET', ...(headers ? { headers } : {}) }, signal, what);
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw failure('InvalidResponse', 'INVALID_JSON', `${what}: response body is not JSON`);
      }
    },
    async postJson(url, body, { signal, headers, what, sendBy }) {
      const text = await send(
        url,
        {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json', ...headers },
        },
        signal,
        what,
        sendBy,
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
