/**
 * The HTTP client activities use for partner calls: connect and response timeouts from config,
 * cancellation through the caller's AbortSignal, bounded JSON bodies, a send deadline for
 * non-idempotent calls, redirects followed only as the caller allows, and failures mapped to
 * the error types of contract/error-types.ts. Error bodies are read up to
 * {@link MAX_ERROR_BODY_BYTES} for the partner's own words, which reach messages only scrubbed and
 * bounded (errors.ts `partnerMessageOf`, R11).
 */
import { Agent, type Dispatcher, request } from 'undici';
import { type HttpCallSpan, startHttpCall } from '../runtime/trace-spans.ts';
import { secretQueryValues } from '../runtime/redact.ts';
import {
  classify,
  failure,
  headerOf,
  type RateLimitReset,
  type ResponseHeaders,
  responseFailure,
} from './errors.ts';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../contract/http-limits.ts';
import { SendDeadlineHandler } from './send-deadline.ts';

export { DEFAULT_MAX_RESPONSE_BYTES };
export type { RateLimitReset, ResponseHeaders };

/**
 * Most bytes read of a non-2xx body: enough for any error message, and a partner answering an
 * error with megabytes costs nothing. A larger body is dropped unread (the connection closed).
 */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** Most redirects one read follows, whatever its caller asks: fetch's own limit. */
export const MAX_REDIRECT_HOPS = 20;

/**
 * Request headers that carry credentials whatever a caller says: never sent to another origin,
 * and their values never shown in a message.
 */
export const CREDENTIAL_HEADERS: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'x-api-key',
];

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
  /**
   * Exact values a failure message must never show (a credential sent some other way than in a
   * {@link CREDENTIAL_HEADERS} header or a secret-named query parameter, which are masked anyway).
   */
  redactValues?: readonly string[];
}

/** Which redirects (301, 302, 303, 307, 308 with a `Location`) a read follows. */
export interface Redirects {
  /**
   * `none`: a redirect is the response. `same_origin`: followed while scheme, host and port stay
   * the first request's; another origin fails `InvalidResponse OFF_ORIGIN_REDIRECT`. `any_origin`:
   * followed anywhere (http and https only), but from the first hop off the origin on, without
   * the credential (headers and query parameter), even if a later hop comes back.
   */
  follow: 'none' | 'same_origin' | 'any_origin';
  /**
   * Most redirects followed for one read (at most {@link MAX_REDIRECT_HOPS} whatever is asked);
   * one more fails `InvalidResponse TOO_MANY_REDIRECTS`.
   */
  maxHops: number;
  /**
   * Where the request carries its credential: header names (besides {@link CREDENTIAL_HEADERS}),
   * and a query parameter, which a same-origin hop gets again when its `Location` lacks it.
   */
  credential: { headers: readonly string[]; queryParam?: string };
}

/** Options of a read ({@link HttpClient.readResponse}, {@link HttpClient.readJson}). */
export interface ReadOptions extends RequestOptions {
  /** Default GET. A POST sends `body` as JSON. */
  method?: 'GET' | 'POST';
  body?: unknown;
  /** Default `{ follow: 'none' }`: a redirect is a response like any other. */
  redirects?: Redirects;
}

/** A response of any status, for a caller that classifies it itself. */
export interface HttpResponse {
  status: number;
  /** Header names in lower case. */
  headers: ResponseHeaders;
  /**
   * The parsed JSON body; undefined when empty or not JSON. A non-2xx body is read up to
   * {@link MAX_ERROR_BODY_BYTES} only (undefined beyond): it is never for storing.
   */
  body: unknown;
  /** The URL that answered: the last one after redirects. */
  url: URL;
}

/** A JSON response with its headers (header names in lower case) and the URL that answered. */
export interface JsonResponse {
  body: unknown;
  headers: ResponseHeaders;
  url: URL;
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
   * callers send an `Idempotency-Key` header where the partner supports one. Follows no redirect.
   * @throws ApplicationFailure: a non-2xx as errors.ts `responseFailure` classifies it (429
   *   RateLimited, 5xx UpstreamUnavailable, …, with the partner's own words, scrubbed),
   *   Timeout, NetworkError, InvalidResponse (`INVALID_JSON`: body is not JSON;
   *   `RESPONSE_TOO_LARGE`: body over `maxResponseBytes`); the signal's reason when aborted.
   */
  getJson(url: URL, opts: RequestOptions): Promise<unknown>;
  /**
   * POSTs `body` as JSON to `url` and returns the parsed JSON response of a 2xx (or null when the
   * body is empty or not JSON: the status is the acknowledgement). Not idempotent by itself:
   * callers send an `Idempotency-Key` the receiver dedupes on. Follows no redirect.
   * @throws as {@link HttpClient.getJson} (except `INVALID_JSON`), and Timeout
   *   `SEND_DEADLINE_PASSED` when `sendBy` passed before the request was written: nothing was sent.
   */
  postJson(url: URL, body: unknown, opts: PostOptions): Promise<unknown>;
  /**
   * GETs `url`, or POSTs `body` as JSON to it, following redirects as `redirects` allows, and
   * returns the response whatever its status: the caller classifies it (errors.ts
   * `responseFailure` is the default). A 2xx body is bounded by `maxResponseBytes`.
   * A read: callers use it for requests that change nothing at the partner.
   * @throws ApplicationFailure Timeout, NetworkError, InvalidResponse (`RESPONSE_TOO_LARGE`;
   *   `TOO_MANY_REDIRECTS`, `REDIRECT_LOOP`, `OFF_ORIGIN_REDIRECT`, `INVALID_REDIRECT`: a
   *   `Location` that is no http(s) URL); the signal's reason when aborted. Never a URL in a message.
   */
  readResponse(url: URL, opts: ReadOptions): Promise<HttpResponse>;
  /**
   * {@link HttpClient.readResponse}, then the default classification: returns the parsed JSON
   * body of a 2xx with the response's headers (for partners that page through a `Link` header).
   * @throws as {@link HttpClient.readResponse} and {@link HttpClient.getJson}.
   */
  readJson(url: URL, opts: ReadOptions): Promise<JsonResponse>;
  /** The options this client was created with (callers that bound a call's effects need its timeouts). */
  readonly options: HttpClientOptions;
  close(): Promise<void>;
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
 * Reads a body as UTF-8 text of at most `max` bytes; undefined when it is larger. Gives up at once
 * when `Content-Length` says more; otherwise counts while reading and destroys the body (aborting
 * the request, so the socket is closed and the partner stops sending) as soon as the count passes
 * `max`.
 */
async function readUpTo(res: Dispatcher.ResponseData, max: number): Promise<string | undefined> {
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) {
    res.body.destroy();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > max) {
      res.body.destroy();
      return undefined;
    }
    chunks.push(buffer);
  }
  return new TextDecoder('utf-8').decode(Buffer.concat(chunks, size));
}

/** {@link readUpTo}, failing `RESPONSE_TOO_LARGE` instead of giving up: for bodies that are the data. */
async function readCapped(res: Dispatcher.ResponseData, max: number, what: string): Promise<string> {
  const text = await readUpTo(res, max);
  if (text !== undefined) return text;
  const declared = Number(res.headers['content-length']);
  throw tooLarge(what, max, Number.isFinite(declared) && declared > max ? declared : undefined);
}

/** The parsed JSON of `text`; undefined when there is none or it is not JSON. */
function jsonOf(text: string | undefined): unknown {
  if (text === undefined || text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const isSuccess = (status: number) => status >= 200 && status < 300;

/**
 * The values a request's credential has: those of its credential headers ({@link CREDENTIAL_HEADERS}
 * and `credential.headers`; of an `Authorization` header the token after its scheme, and a Basic
 * pair and its password; each cookie's value), of its secret-named query parameters and of
 * `credential.queryParam`. What a partner's message may echo and must not show: pass them as
 * `redactValues` to errors.ts `responseFailure` when classifying a {@link HttpClient.readResponse}
 * answer. Pure.
 */
export function credentialValuesOf(
  url: URL,
  headers: Record<string, string>,
  credential: Redirects['credential'] = { headers: [] },
): string[] {
  const { queryParam } = credential;
  const credentialHeaders = credentialHeadersOf(credential);
  const values = secretQueryValues(url);
  const param = queryParam === undefined ? null : url.searchParams.get(queryParam);
  if (param) values.push(param);
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (!credentialHeaders.has(lower)) continue;
    if (lower === 'cookie') {
      // The names say what each cookie is, and are no secret.
      for (const pair of value.split(';')) values.push(pair.slice(pair.indexOf('=') + 1).trim());
      continue;
    }
    // `Bearer abc`: masking the token masks the header value too, and leaves the scheme readable.
    const scheme = lower.endsWith('authorization') ? /^(\w+)\s+(\S+)$/.exec(value.trim()) : null;
    if (!scheme) {
      values.push(value);
      continue;
    }
    const token = scheme[2] ?? '';
    values.push(token);
    if (scheme[1]?.toLowerCase() === 'basic') {
      const pair = Buffer.from(token, 'base64').toString('utf8');
      values.push(pair, pair.slice(pair.indexOf(':') + 1));
    }
  }
  return values;
}

/** The names of the headers that carry a request's credential, in lower case. */
function credentialHeadersOf(credential: Redirects['credential']): Set<string> {
  return new Set([...CREDENTIAL_HEADERS, ...credential.headers.map((h) => h.toLowerCase())]);
}

/**
 * `url` without query parameter `name`, the other pairs byte for byte as written (a signed link
 * stays valid). Pure.
 */
export function withoutQueryParam(url: URL, name: string): URL {
  if (url.search === '') return new URL(url);
  const keyOf = (pair: string) => {
    try {
      return decodeURIComponent((pair.split('=')[0] ?? '').replace(/\+/g, ' '));
    } catch {
      return pair;
    }
  };
  const kept = url.search
    .slice(1)
    .split('&')
    .filter((pair) => keyOf(pair) !== name);
  const out = new URL(url);
  out.search = kept.length > 0 ? `?${kept.join('&')}` : '';
  return out;
}

/** One request as sent: what a redirect changes. */
interface Outgoing {
  url: URL;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Headers that describe a request body: dropped with the body when a redirect turns a POST into a GET. */
const BODY_HEADERS = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-location',
]);
const NO_REDIRECTS: Redirects = { follow: 'none', maxHops: 0, credential: { headers: [] } };

/** What identifies a request for loop detection: method and URL, without the credential, parameters sorted. */
function visitKey(req: Outgoing, queryParam: string | undefined): string {
  const url = queryParam === undefined ? new URL(req.url) : withoutQueryParam(req.url, queryParam);
  url.searchParams.sort();
  url.hash = '';
  return `${req.method} ${url.href}`;
}

/**
 * The request a redirect asks for, as fetch makes it: 303 (and 301/302 of a POST) become a GET
 * without body; 307/308 keep method and body. Same origin as `first`: the credential stays (the
 * query credential added again when the `Location` lacks it). Another origin: only with
 * `any_origin`, and without the credential. Messages never hold the URL (it may carry secrets).
 */
function redirected(
  req: Outgoing,
  status: number,
  location: string,
  ctx: {
    first: URL;
    redirects: Redirects;
    credentialHeaders: ReadonlySet<string>;
    credentialed: boolean;
    what: string;
  },
): { next: Outgoing; credentialed: boolean } {
  const { first, redirects, what } = ctx;
  const { queryParam } = redirects.credential;
  let url: URL;
  try {
    url = new URL(location, req.url);
  } catch {
    throw failure(
      'InvalidResponse',
      'INVALID_REDIRECT',
      `${what}: a ${status} redirect to an invalid Location`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw failure(
      'InvalidResponse',
      'INVALID_REDIRECT',
      `${what}: a ${status} redirect to a non-HTTP Location`,
    );
  }
  url.hash = '';
  let credentialed = ctx.credentialed;
  if (url.origin !== first.origin) {
    if (redirects.follow !== 'any_origin') {
      throw failure(
        'InvalidResponse',
        'OFF_ORIGIN_REDIRECT',
        `${what}: a ${status} redirect to another origin, not followed (redirects to the same origin only)`,
      );
    }
    credentialed = false;
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (!credentialed && ctx.credentialHeaders.has(name.toLowerCase())) continue;
    headers[name] = value;
  }
  if (queryParam !== undefined) {
    const value = first.searchParams.get(queryParam);
    if (!credentialed) url = withoutQueryParam(url, queryParam);
    else if (value !== null && !url.searchParams.has(queryParam)) {
      const pair = `${encodeURIComponent(queryParam)}=${encodeURIComponent(value)}`;
      url.search = url.search.length > 1 ? `${url.search}&${pair}` : `?${pair}`;
    }
  }
  const toGet = status === 303 || ((status === 301 || status === 302) && req.method === 'POST');
  if (!toGet) return { next: { ...req, url, headers }, credentialed };
  for (const name of Object.keys(headers)) if (BODY_HEADERS.has(name.toLowerCase())) delete headers[name];
  return { next: { url, method: 'GET', headers }, credentialed };
}

/** Runs one part of an HTTP call, ending its span as failed when that part throws. */
async function traced<T>(span: HttpCallSpan, part: () => Promise<T>): Promise<T> {
  try {
    return await part();
  } catch (error) {
    span.end({ error });
    throw error;
  }
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
  const capOf = (opts: { maxResponseBytes?: number }) =>
    Math.min(maxBytes, opts.maxResponseBytes ?? maxBytes);
  // A 2xx body is the data, bounded by the cap; any other is read only for the partner's words.
  const bodyOf = async (
    res: Dispatcher.ResponseData,
    cap: number,
    what: string,
  ): Promise<string | undefined> =>
    isSuccess(res.statusCode) ? readCapped(res, cap, what) : readUpTo(res, MAX_ERROR_BODY_BYTES);
  // Runs `call`, turning what it throws into a typed failure (the signal's reason when aborted).
  const guarded = async <T>(signal: AbortSignal, what: string, call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw classify(err, what);
    }
  };
  const outgoing = (url: URL, opts: ReadOptions): Outgoing => {
    const { headers = {}, method = 'GET', body } = opts;
    return method === 'POST'
      ? {
          url,
          method,
          body: JSON.stringify(body ?? null),
          headers: { 'content-type': 'application/json', ...headers },
        }
      : { url, method, headers: { ...headers } };
  };
  const readResponse: HttpClient['readResponse'] = (url, opts) => {
    const { signal, what } = opts;
    const redirects = opts.redirects ?? NO_REDIRECTS;
    const credentialHeaders = credentialHeadersOf(redirects.credential);
    const maxHops = Math.min(MAX_REDIRECT_HOPS, Math.max(0, Math.floor(redirects.maxHops) || 0));
    const { queryParam } = redirects.credential;
    return guarded(signal, what, async () => {
      let req = outgoing(url, opts);
      let credentialed = true;
      const visited = new Set([visitKey(req, queryParam)]);
      for (let hops = 0; ; hops++) {
        const span = startHttpCall(req.method, req.url, hops);
        const res = await traced(span, () =>
          request(req.url, {
            method: req.method,
            headers: { ...req.headers, ...span.headers },
            ...(req.body === undefined ? {} : { body: req.body }),
            signal,
            dispatcher: agent,
          }),
        );
        const location = headerOf(res.headers, 'location');
        if (redirects.follow === 'none' || !REDIRECT_STATUSES.has(res.statusCode) || location === undefined) {
          const text = await traced(span, () => bodyOf(res, capOf(opts), what));
          span.end({ status: res.statusCode });
          return { status: res.statusCode, headers: res.headers, body: jsonOf(text), url: req.url };
        }
        // A redirect's body is of no use; reading it (up to undici's dump limit) keeps the socket.
        await traced(span, () => res.body.dump());
        span.end({ status: res.statusCode });
        const hop = redirected(req, res.statusCode, location, {
          first: url,
          redirects,
          credentialHeaders,
          credentialed,
          what,
        });
        const key = visitKey(hop.next, queryParam);
        if (visited.has(key)) {
          throw failure(
            'InvalidResponse',
            'REDIRECT_LOOP',
            `${what}: redirected back to a URL already requested`,
          );
        }
        if (hops >= maxHops) {
          throw failure(
            'InvalidResponse',
            'TOO_MANY_REDIRECTS',
            `${what}: more than ${maxHops} redirect(s) in one request`,
          );
        }
        visited.add(key);
        req = hop.next;
        credentialed = hop.credentialed;
      }
    });
  };

  const readJson: HttpClient['readJson'] = async (url, opts) => {
    const res = await readResponse(url, opts);
    if (!isSuccess(res.status)) {
      const redirects = opts.redirects ?? NO_REDIRECTS;
      const secrets = credentialValuesOf(url, opts.headers ?? {}, redirects.credential);
      throw responseFailure({
        status: res.status,
        headers: res.headers,
        body: res.body,
        what: opts.what,
        ...(opts.rateLimitReset === undefined ? {} : { rateLimitReset: opts.rateLimitReset }),
        redactValues: [...secrets, ...(opts.redactValues ?? [])],
      });
    }
    if (res.body === undefined) {
      throw failure('InvalidResponse', 'INVALID_JSON', `${opts.what}: response body is not JSON`);
    }
    return { body: res.body, headers: res.headers, url: res.url };
  };

  return {
    async getJson(url, opts) {
      return (await readJson(url, { ...opts, method: 'GET' })).body;
    },
    readResponse,
    readJson,
    async postJson(url, body, opts) {
      const { signal, what, sendBy } = opts;
      const req = outgoing(url, { ...opts, method: 'POST', body });
      const res = await guarded(signal, what, async () => {
        const span = startHttpCall('POST', url);
        const answer = await traced(span, () =>
          request(url, {
            method: 'POST',
            headers: { ...req.headers, ...span.headers },
            body: req.body ?? null,
            signal,
            dispatcher: dispatcherFor(sendBy, what),
          }),
        );
        const text = await traced(span, () => bodyOf(answer, capOf(opts), what));
        span.end({ status: answer.statusCode });
        return { status: answer.statusCode, headers: answer.headers, text };
      });
      if (!isSuccess(res.status)) {
        throw responseFailure({
          status: res.status,
          headers: res.headers,
          body: jsonOf(res.text),
          what,
          ...(opts.rateLimitReset === undefined ? {} : { rateLimitReset: opts.rateLimitReset }),
          redactValues: [...credentialValuesOf(url, opts.headers ?? {}), ...(opts.redactValues ?? [])],
        });
      }
      return jsonOf(res.text) ?? null;
    },
    options,
    close: () => agent.close(),
  };
}
