/**
 * Turns anything an activity meets into an ApplicationFailure with an error type
 * (contract/error-types.ts), a safe code and a message free of URLs, headers and bodies (R7, R11):
 * of a partner's error body, only its own message, scrubbed and bounded (`partnerMessageOf`).
 * Decisions use status codes, headers and error `code` properties, never class names nor a
 * partner's words. The retry delay (jitter, Retry-After) and the deadline check are applied
 * afterwards, in activities/retry/timing.ts.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/activity';
import { redactFreeText, redactUrlsIn } from '../runtime/redact.ts';
import { type ErrorType, isRetryableErrorType } from '../contract/error-types.ts';
import { codesOf, databaseOutageCode } from './database-errors.ts';
import { parseRateLimitReset, parseRetryAfter, type ResetUnit } from './retry/delay.ts';

export { codeOf, codesOf } from './database-errors.ts';

/** Details every failure carries: a safe code, and the partner's Retry-After when it sent one. */
export interface FailureDetails {
  code: string;
  retryAfterMs?: number;
}

/** Builds the failure every activity throws: typed, safely coded, retryable per its type. */
export function failure(
  type: ErrorType,
  code: string,
  message: string,
  extra: Omit<FailureDetails, 'code'> = {},
): ApplicationFailure {
  return ApplicationFailure.create({
    type,
    message,
    nonRetryable: !isRetryableErrorType(type),
    details: [{ code, ...extra } satisfies FailureDetails],
  });
}

/** The details of a failure made by {@link failure}. */
export function detailsOf(f: ApplicationFailure): FailureDetails | undefined {
  const d = f.details?.[0] as Partial<FailureDetails> | undefined;
  return typeof d?.code === 'string' ? (d as FailureDetails) : undefined;
}

/**
 * The failure for a non-2xx HTTP status from a partner. 429, and 503 with a Retry-After, are
 * `RateLimited` and carry the requested wait (see parseRetryAfter). For a response, with its
 * headers and body at hand, {@link responseFailure} says more.
 */
export function httpStatusFailure(
  status: number,
  what: string,
  retryAfter?: string,
  now: Date = new Date(),
): ApplicationFailure {
  return statusFailure(status, what, parseRetryAfter(retryAfter, now), undefined);
}

/**
 * `limited`: the response says it is a rate limit although its status alone would not (a 403),
 * with the header that says so, if any, for the message.
 */
function statusFailure(
  status: number,
  what: string,
  retryAfterMs: number | undefined,
  partnerWords: string | undefined,
  limited?: { by?: string },
): ApplicationFailure {
  const code = `HTTP_${status}`;
  const said = partnerWords === undefined ? '' : `: ${JSON.stringify(partnerWords)}`;
  if (limited !== undefined || status === 429 || (status === 503 && retryAfterMs !== undefined)) {
    const by = limited?.by === undefined ? '' : `, ${limited.by}`;
    const wait = retryAfterMs === undefined ? '' : `, retry after ${Math.round(retryAfterMs / 1000)} s`;
    return failure('RateLimited', code, `${what}: rate limited (${status}${by}${wait})${said}`, {
      retryAfterMs,
    });
  }
  if (status === 401 || status === 403)
    return failure('PermissionDenied', code, `${what}: permission denied (${status})${said}`);
  if (status === 404 || status === 410)
    return failure('NotFound', code, `${what}: not found (${status})${said}`);
  if (status === 408) return failure('Timeout', code, `${what}: request timeout (408)${said}`);
  if (status >= 500)
    return failure('UpstreamUnavailable', code, `${what}: upstream unavailable (${status})${said}`);
  return failure('InvalidInput', code, `${what}: rejected with status ${status}${said}`);
}

/** Response headers as undici hands them over: names in lower case. */
export type ResponseHeaders = Record<string, string | string[] | undefined>;

/** A rate-limit reset header a partner names (e.g. `X-RateLimit-Reset`) and how it writes it. */
export interface RateLimitReset {
  header: string;
  unit: Exclude<ResetUnit, 'guess'>;
}

/** Headers saying how many calls the current rate-limit window has left (GitHub, IETF draft, Twitter). */
export const QUOTA_REMAINING_HEADERS: readonly string[] = [
  'x-ratelimit-remaining',
  'ratelimit-remaining',
  'x-rate-limit-remaining',
];
/**
 * Headers saying when that window resets, read with the unit guessed (`parseRateLimitReset`):
 * an epoch second at GitHub and Twitter, seconds to wait in the IETF draft and at many others.
 */
export const QUOTA_RESET_HEADERS: readonly string[] = [
  'x-ratelimit-reset',
  'ratelimit-reset',
  'x-rate-limit-reset',
];

/** The first value of a header (a repeated header comes as an array). */
export function headerOf(headers: ResponseHeaders, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** Longest partner message kept, in characters, after scrubbing. */
export const MAX_PARTNER_WORDS = 300;
/** Longest stretch of a partner's text scrubbed: enough for any message, bounded work on a hostile one. */
const MAX_SCRUBBED_TEXT = 4_000;

type Field = (body: Record<string, unknown>) => unknown;
const item = (v: unknown, key: string | number): unknown =>
  typeof v === 'object' && v !== null ? (v as Record<string | number, unknown>)[key] : undefined;
/**
 * Where APIs put the human-readable reason of an error, most specific first: Google, Microsoft
 * Graph, Stripe (`error.message`); OAuth (`error_description`); GitHub, Twilio, HubSpot
 * (`message`); RFC 9457 problem details (`detail`, then `title`); FastAPI (`detail[0].msg`);
 * GraphQL and JSON:API (`errors[0].message`, `.detail`, `.title`); Jira (`errorMessages[0]`);
 * Apigee (`fault.faultstring`); Zendesk (`description`); Slack (`error`, a code word).
 */
const MESSAGE_FIELDS: readonly Field[] = [
  (b) => item(b.error, 'message'),
  (b) => b.error_description,
  (b) => b.message,
  (b) => b.detail,
  (b) => item(item(b.detail, 0), 'msg'),
  (b) => item(item(b.errors, 0), 'message'),
  (b) => item(item(b.errors, 0), 'detail'),
  (b) => item(item(b.errors, 0), 'title'),
  (b) => item(b.errors, 0),
  (b) => item(b.errorMessages, 0),
  (b) => item(b.fault, 'faultstring'),
  (b) => b.description,
  (b) => b.title,
  (b) => b.msg,
  (b) => b.error,
];

/**
 * A partner's own text, made fit for a failure message (kept in dead letters, runs, the workflow's
 * history; shown by `dlq show` and `sources try`): scrubbed by `redactFreeText` (URLs, emails,
 * tokens, and every value of `secrets`, e.g. the source's credential), then cut to
 * {@link MAX_PARTNER_WORDS} characters. Undefined when nothing is left. Pure.
 */
export function partnerText(text: string, secrets: readonly string[] = []): string | undefined {
  let head = [...text].slice(0, MAX_SCRUBBED_TEXT).join('');
  // A cut may split a secret, whose start no longer matches it: the cut-off word goes too.
  if (head.length < text.length) head = head.replace(/\S*$/, '');
  const clean = redactFreeText(head, secrets);
  if (clean === '') return undefined;
  const chars = [...clean];
  return chars.length <= MAX_PARTNER_WORDS ? clean : `${chars.slice(0, MAX_PARTNER_WORDS - 1).join('')}…`;
}

/**
 * The partner's own words in an error body (a parsed JSON value): the first non-empty string of
 * the usual error fields (Salesforce's array body: its first element's), scrubbed and bounded by
 * {@link partnerText}. Undefined when the body has none. Pure.
 */
export function partnerMessageOf(body: unknown, secrets: readonly string[] = []): string | undefined {
  const top: unknown = Array.isArray(body) ? (body as unknown[])[0] : body;
  if (typeof top !== 'object' || top === null) return undefined;
  for (const pick of MESSAGE_FIELDS) {
    const value = pick(top as Record<string, unknown>);
    if (typeof value !== 'string' || value.trim() === '') continue;
    return partnerText(value, secrets);
  }
  return undefined;
}

/** A non-2xx response, for {@link responseFailure}. */
export interface FailedResponse {
  status: number;
  headers: ResponseHeaders;
  /** The parsed JSON body; undefined when empty, not JSON, or not read. */
  body?: unknown;
  /** What the call is, for the message (never a URL: it may carry secrets). */
  what: string;
  /** A reset header the caller names: read on a 429, a 503 and a 403 or 429 out of quota. */
  rateLimitReset?: RateLimitReset;
  /** Exact values never to show (the request's credential): masked in the partner's words. */
  redactValues?: readonly string[];
  now?: Date;
}

/**
 * The default classification of a non-2xx response: the status mapping of
 * {@link httpStatusFailure}, plus
 * - a 403 or 429 whose remaining-quota header ({@link QUOTA_REMAINING_HEADERS}) is `0` is
 *   `RateLimited` (GitHub's primary rate limit answers 403), waiting for `Retry-After`, else the
 *   named `rateLimitReset` header, else the first reset header found ({@link QUOTA_RESET_HEADERS});
 *   a plain 429 waits for those too;
 * - a 403 with `Retry-After` is `RateLimited` as well (GitHub's secondary rate limit): a refusal
 *   that says when to come back is not a lasting denial;
 * - the partner's own words ({@link partnerMessageOf}) appended to the message:
 *   `partner x: rejected with status 400: "Invalid value for $top"`.
 * Pure (reads the clock when `now` is not given); returns, never throws.
 */
export function responseFailure(res: FailedResponse): ApplicationFailure {
  const { status, headers, rateLimitReset } = res;
  const now = res.now ?? new Date();
  const words = partnerMessageOf(res.body, res.redactValues);
  const retryAfter = headerOf(headers, 'retry-after');
  const quota =
    status === 403 || status === 429
      ? QUOTA_REMAINING_HEADERS.find((name) => headerOf(headers, name)?.trim() === '0')
      : undefined;
  const limited = quota !== undefined || status === 429 || status === 503;
  let waitMs = parseRetryAfter(retryAfter, now);
  if (waitMs === undefined && limited && rateLimitReset !== undefined) {
    waitMs = parseRateLimitReset(headerOf(headers, rateLimitReset.header), rateLimitReset.unit, now);
  }
  if (waitMs === undefined && (quota !== undefined || status === 429)) {
    for (const name of QUOTA_RESET_HEADERS) {
      waitMs = parseRateLimitReset(headerOf(headers, name), 'guess', now);
      if (waitMs !== undefined) break;
    }
  }
  if (quota !== undefined) return statusFailure(status, res.what, waitMs, words, { by: `${quota} 0` });
  // The wait is Retry-After's here: no reset header is read for a 403 with quota left.
  if (status === 403 && waitMs !== undefined) return statusFailure(status, res.what, waitMs, words, {});
  return statusFailure(status, res.what, waitMs, words);
}

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);
const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);
/** What a thrown value is, before it becomes a failure. Exhaustive: every value lands in one. */
type Kind =
  | { kind: 'typed'; failure: ApplicationFailure }
  | { kind: 'cancelled' }
  | { kind: 'timeout'; code: string }
  | { kind: 'network'; code: string }
  | { kind: 'database'; code: string }
  | { kind: 'response-shape' }
  | { kind: 'internal'; code: string };

function kindOf(err: unknown): Kind {
  if (err instanceof ApplicationFailure) return { kind: 'typed', failure: err };
  // The activity's own cancellation (its signal's reason) must reach the SDK unchanged.
  if (err instanceof CancelledFailure) return { kind: 'cancelled' };
  // First: a refused or reset connection to our own database is the database being unavailable,
  // not a partner's network error.
  const database = databaseOutageCode(err);
  if (database) return { kind: 'database', code: database };
  const codes = codesOf(err);
  const timeout = codes.find((c) => TIMEOUT_CODES.has(c));
  if (timeout) return { kind: 'timeout', code: timeout };
  const network = codes.find((c) => NETWORK_CODES.has(c));
  if (network) return { kind: 'network', code: network };
  const name = typeof err === 'object' && err !== null ? (err as { name?: unknown }).name : undefined;
  // AbortSignal.timeout() and friends: a DOMException named TimeoutError (a web standard name).
  if (name === 'TimeoutError') return { kind: 'timeout', code: 'TIMEOUT' };
  // zod's errors carry an `issues` array: a response that does not match its contract.
  if (typeof err === 'object' && err !== null && Array.isArray((err as { issues?: unknown }).issues)) {
    return { kind: 'response-shape' };
  }
  return { kind: 'internal', code: codes[0] ?? 'UNCLASSIFIED' };
}

function assertNever(value: never): never {
  throw new Error(`unhandled error kind: ${JSON.stringify(value)}`);
}

/**
 * Classifies anything thrown into an error type (exhaustively: unknown errors become a
 * non-retryable `Internal`). ApplicationFailures and cancellations pass through unchanged.
 * Messages name `what` failed and the safe code; the original message is kept only for
 * `Internal`, with URL credentials redacted, and cut short.
 */
export function classify(err: unknown, what: string): unknown {
  const k = kindOf(err);
  switch (k.kind) {
    case 'typed':
      return k.failure;
    case 'cancelled':
      return err;
    case 'timeout':
      return failure('Timeout', k.code, `${what}: timed out`);
    case 'network':
      return failure('NetworkError', k.code, `${what}: network error`);
    case 'database':
      return failure('DatabaseUnavailable', k.code, `${what}: database unavailable`);
    case 'response-shape':
      return failure('InvalidResponse', 'SCHEMA', `${what}: response does not match the expected shape`);
    case 'internal': {
      const text = redactUrlsIn(err instanceof Error ? `${err.name}: ${err.message}` : String(err)).slice(
        0,
        300,
      );
      return failure('Internal', k.code, `${what}: unexpected error (${text})`);
    }
    default:
      return assertNever(k);
  }
}
