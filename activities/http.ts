/**
 * The HTTP client activities use for partner calls: connect and response timeouts from config,
 * cancellation through the caller's AbortSignal, JSON bodies, and failures mapped to DESIGN error
 * types. Response bodies of failed calls are drained and dropped, never put into messages (R11).
 */
import { Agent, request } from 'undici';
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
  close(): Promise<void>;
}

/** Creates a client with its own connection pool; close it on shutdown. */
export function createHttpClient(options: HttpClientOptions): HttpClient {
  const agent = new Agent({
    connect: { timeout: options.connectTimeoutMs },
    headersTimeout: options.responseTimeoutMs,
    bodyTimeout: options.responseTimeoutMs,
  });
  return {
    async getJson(url, { signal, headers, what }) {
      let text: string;
      try {
        const res = await request(url, { method: 'GET', headers, signal, dispatcher: agent });
        if (res.statusCode < 200 || res.statusCode >= 300) {
          await res.body.dump();
          const retryAfter = res.headers['retry-after'];
          throw httpStatusFailure(
            res.statusCode,
            what,
            Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
          );
        }
        text = await res.body.text();
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        throw classify(err, what);
      }
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw failure('InvalidResponse', 'INVALID_JSON', `${what}: response body is not JSON`);
      }
    },
    close: () => agent.close(),
  };
}
