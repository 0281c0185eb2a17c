/**
 * Turns anything an activity meets into an ApplicationFailure with a DESIGN error type, a safe
 * code and a message free of URLs, headers and bodies (R7, R11). Decisions use status codes and
 * error `code` properties, never class names. The retry delay (jitter, Retry-After) and the
 * deadline check are applied afterwards, in activities/retry-timing.ts.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/activity';
import { redactUrlsIn } from '../runtime/redact.ts';
import { type ErrorType, isRetryableErrorType } from '../workflows/error-types.ts';
import { codesOf, databaseOutageCode } from './database-errors.ts';
import { parseRetryAfter } from './retry-delay.ts';

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
 * `RateLimited` and carry the requested wait (seconds or HTTP-date, see parseRetryAfter).
 */
export function httpStatusFailure(
  status: number,
  what: string,
  retryAfter?: string,
  now: Date = new Date(),
): ApplicationFailure {
  const code = `HTTP_${status}`;
  const retryAfterMs = parseRetryAfter(retryAfter, now);
  if (status === 429 || (status === 503 && retryAfterMs !== undefined)) {
    const wait = retryAfterMs === undefined ? '' : `, retry after ${Math.round(retryAfterMs / 1000)} s`;
    return failure('RateLimited', code, `${what}: rate limited (${status}${wait})`, { retryAfterMs });
  }
  if (status === 401 || status === 403)
    return failure('PermissionDenied', code, `${what}: permission denied (${status})`);
  if (status === 404 || status === 410) return failure('NotFound', code, `${what}: not found (${status})`);
  if (status === 408) return failure('Timeout', code, `${what}: request timeout (408)`);
  if (status >= 500) return failure('UpstreamUnavailable', code, `${what}: upstream unavailable (${status})`);
  return failure('InvalidInput', code, `${what}: rejected with status ${status}`);
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
 * Classifies anything thrown into a DESIGN error type (exhaustively: unknown errors become a
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
