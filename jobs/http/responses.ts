/**
 * What a partner's response means, for the declarative job: the source's own rules first
 * (`responses`: a status, a header, a body field → success, retry, rate limited, denied, bad input,
 * not found, ignore), then the built-in ones. The built-in ones read what real partners put inside
 * a 200 — Slack's `ok: false` with its `error`, a GraphQL `errors` list (a throttled cost among
 * them) — as the error it names, never as a page whose shape is off; a non-2xx gets the engine's
 * default classification (activities/errors.ts `responseFailure`: statuses, Retry-After, GitHub's
 * out-of-quota 403, the partner's own words, scrubbed).
 */
import { isDeepStrictEqual } from 'node:util';
import {
  type ErrorType,
  failure,
  headerOf,
  type HttpResponse,
  parseRateLimitReset,
  parseRetryAfter,
  partnerMessageOf,
  partnerText,
  responseFailure,
} from '../../activities/job-api/index.ts';
import type { HttpJobConfig, ResponseRule } from './config.ts';
import { readPath } from './path.ts';

/**
 * A response to read records from, or one a rule says stands for an empty last page; `stated`: the
 * rule matched a body field, so the partner itself says the page is empty.
 */
export type Verdict = { kind: 'page' } | { kind: 'ignore'; why: string; stated: boolean };

const TYPE_OF: Record<Exclude<ResponseRule['then'], 'success' | 'ignore'>, ErrorType> = {
  retry: 'UpstreamUnavailable',
  rate_limited: 'RateLimited',
  permission_denied: 'PermissionDenied',
  invalid_input: 'InvalidInput',
  not_found: 'NotFound',
};

/** Slack-style error names that mean the credential, not the request (`ok: false`). */
const DENIED_WORDS = new Set([
  'invalid_auth',
  'not_authed',
  'missing_scope',
  'account_inactive',
  'token_revoked',
  'token_expired',
  'no_permission',
  'access_denied',
  'not_allowed_token_type',
]);
/** GraphQL error codes (`extensions.code`, or GitHub's `type`) and what they are. */
const GRAPHQL_TYPES: Record<string, ErrorType> = {
  THROTTLED: 'RateLimited',
  RATE_LIMITED: 'RateLimited',
  // GitHub has sent both spellings for its GraphQL rate limit.
  RATE_LIMIT: 'RateLimited',
  MAX_COST_EXCEEDED: 'InvalidInput',
  UNAUTHENTICATED: 'PermissionDenied',
  FORBIDDEN: 'PermissionDenied',
  ACCESS_DENIED: 'PermissionDenied',
  NOT_FOUND: 'NotFound',
  INTERNAL_SERVER_ERROR: 'UpstreamUnavailable',
  SERVICE_UNAVAILABLE: 'UpstreamUnavailable',
};

function matches(rule: ResponseRule, res: HttpResponse): boolean {
  const { status, header, body } = rule.when;
  if (status && !status.includes(res.status)) return false;
  if (header) {
    const value = headerOf(res.headers, header.name);
    if (value === undefined) return false;
    if (header.equals !== undefined && value.trim().toLowerCase() !== header.equals.toLowerCase())
      return false;
  }
  if (body) {
    const read = readPath(res.body, body.path);
    if (!read.found) return false;
    if (body.equals !== undefined && !isDeepStrictEqual(read.value, body.equals)) return false;
  }
  return true;
}

/** A wait as the partner writes it, in ms from `now`: `seconds` also takes an HTTP date. */
function parseWait(value: string, unit: 'seconds' | 'epoch' | 'milliseconds', now: Date): number | undefined {
  return unit === 'seconds' ? parseRetryAfter(value, now) : parseRateLimitReset(value, unit, now);
}

/** The wait a rule reads from its header or body field, in ms; undefined when there is none. */
function ruleWait(rule: ResponseRule, res: HttpResponse, now: Date): number | undefined {
  let raw: unknown;
  if (rule.waitHeader !== undefined) raw = headerOf(res.headers, rule.waitHeader);
  else if (rule.waitPath !== undefined) {
    const read = readPath(res.body, rule.waitPath);
    raw = read.found ? read.value : undefined;
  } else return undefined;
  if (typeof raw !== 'string' && typeof raw !== 'number') return undefined;
  return parseWait(String(raw), rule.waitUnit, now);
}

/** The partner's words at a rule's `messagePath`, scrubbed and bounded, else where partners put them. */
function wordsOf(
  rule: ResponseRule | undefined,
  res: HttpResponse,
  redact: readonly string[],
): string | undefined {
  if (rule?.messagePath !== undefined) {
    const read = readPath(res.body, rule.messagePath);
    if (read.found && (typeof read.value === 'string' || typeof read.value === 'number')) {
      return partnerText(String(read.value), redact);
    }
  }
  return partnerMessageOf(res.body, redact);
}

const quoted = (words: string | undefined) => (words === undefined ? '' : `: "${words}"`);

/**
 * What `res` means for a source with `config`.
 * @returns `page` (read the records) or `ignore` (an empty last page).
 * @throws ApplicationFailure of the type a rule or a built-in reading names (retryable ones carry
 *   the partner's wait); InvalidResponse `INVALID_JSON` for a page whose body is not JSON.
 */
export function verdictOf(
  res: HttpResponse,
  config: Pick<HttpJobConfig, 'responses' | 'rateLimit'>,
  ctx: { what: string; redact: readonly string[]; now?: Date },
): Verdict {
  const { what, redact } = ctx;
  const now = ctx.now ?? new Date();
  const index = config.responses.findIndex((rule) => matches(rule, res));
  const rule = config.responses[index];
  if (rule !== undefined) {
    const said = `response rule ${index + 1} (${rule.then}, status ${res.status})`;
    if (rule.then === 'ignore') {
      return {
        kind: 'ignore',
        why: `${said}: read as an empty last page`,
        stated: rule.when.body !== undefined,
      };
    }
    if (rule.then !== 'success') {
      const wait = ruleWait(rule, res, now) ?? defaultWait(res, config, now);
      return fail(
        TYPE_OF[rule.then],
        'PARTNER_RULE',
        `${what}: ${said}${quoted(wordsOf(rule, res, redact))}`,
        wait,
      );
    }
  } else if (res.status < 200 || res.status >= 300) {
    throw responseFailure({
      status: res.status,
      headers: res.headers,
      body: res.body,
      what,
      ...(config.rateLimit
        ? { rateLimitReset: { header: config.rateLimit.resetHeader, unit: config.rateLimit.unit } }
        : {}),
      redactValues: redact,
      now,
    });
  }
  if (res.body === undefined) {
    throw failure('InvalidResponse', 'INVALID_JSON', `${what}: response body is not JSON`);
  }
  if (rule === undefined) errorInside(res, config, { what, redact, now });
  return { kind: 'page' };
}

/** The wait a refusal's own headers ask for (Retry-After, or the source's reset header). */
function defaultWait(
  res: HttpResponse,
  config: Pick<HttpJobConfig, 'rateLimit'>,
  now: Date,
): number | undefined {
  const retryAfter = headerOf(res.headers, 'retry-after');
  if (retryAfter !== undefined) return parseWait(retryAfter, 'seconds', now);
  if (config.rateLimit === undefined) return undefined;
  const reset = headerOf(res.headers, config.rateLimit.resetHeader);
  return reset === undefined ? undefined : parseWait(reset, config.rateLimit.unit, now);
}

function fail(type: ErrorType, code: string, message: string, waitMs: number | undefined): never {
  throw failure(type, code, message, waitMs === undefined ? {} : { retryAfterMs: waitMs });
}

/**
 * The errors real partners put inside a 200: Slack's `ok: false` and a GraphQL `errors` list.
 * @throws ApplicationFailure of the type the error names.
 */
function errorInside(
  res: HttpResponse,
  config: Pick<HttpJobConfig, 'rateLimit'>,
  ctx: { what: string; redact: readonly string[]; now: Date },
): void {
  const body = res.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const { ok, error, errors } = body as { ok?: unknown; error?: unknown; errors?: unknown };
  if (ok === false) {
    const name = typeof error === 'string' ? error : '';
    const type: ErrorType =
      name === 'ratelimited' || name === 'rate_limited'
        ? 'RateLimited'
        : DENIED_WORDS.has(name)
          ? 'PermissionDenied'
          : name.endsWith('_not_found')
            ? 'NotFound'
            : 'InvalidInput';
    const words = partnerText(name, ctx.redact);
    fail(
      type,
      'PARTNER_ERROR',
      `${ctx.what}: the partner answered ok: false${quoted(words)}`,
      defaultWait(res, config, ctx.now),
    );
  }
  if (Array.isArray(errors) && errors.length > 0) {
    const codes = errors.map((e: unknown) => {
      const x = e as { extensions?: { code?: unknown }; type?: unknown } | null;
      const code = x?.extensions?.code ?? x?.type;
      return typeof code === 'string' ? code.toUpperCase() : '';
    });
    const types = codes.map((c) => GRAPHQL_TYPES[c]).filter((t): t is ErrorType => t !== undefined);
    // A throttle among the errors decides: the request was fine and will be again after a wait.
    const type = types.includes('RateLimited') ? 'RateLimited' : (types[0] ?? 'InvalidInput');
    const code = codes.find((c) => GRAPHQL_TYPES[c] === type) ?? '';
    const words = partnerMessageOf(body, ctx.redact);
    fail(
      type,
      'PARTNER_ERROR',
      `${ctx.what}: the response holds ${errors.length} error(s)${code ? ` (${code})` : ''}${quoted(words)}`,
      type === 'RateLimited' ? (defaultWait(res, config, ctx.now) ?? throttleWait(body)) : undefined,
    );
  }
}

/**
 * A GraphQL cost throttle's own wait (Shopify's `extensions.cost`): the points missing over the
 * rate they come back at; undefined when the body does not say.
 */
function throttleWait(body: object): number | undefined {
  const cost = (body as { extensions?: { cost?: Record<string, unknown> } }).extensions?.cost;
  const requested = cost?.requestedQueryCost;
  const status = cost?.throttleStatus as Record<string, unknown> | undefined;
  const available = status?.currentlyAvailable;
  const rate = status?.restoreRate;
  if (
    typeof requested !== 'number' ||
    typeof available !== 'number' ||
    typeof rate !== 'number' ||
    rate <= 0
  ) {
    return undefined;
  }
  return Math.max(0, Math.ceil(((requested - available) / rate) * 1000));
}
