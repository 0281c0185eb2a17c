/**
 * Builds one request of a declarative source: the URL from the base URL, the path and query
 * templates and the paging position; the headers; the JSON body of a POST; and the credential,
 * resolved from its `DF_SECRET_*` reference at call time (R2) and put only where `auth` says.
 */
import { credentialsMissing, failure, type FetchContext } from '../../activities/job-api/index.ts';
import type { Auth, HttpJobConfig } from './config.ts';
import { type Position, sameOriginUrl } from './paging.ts';
import { type ParentValues, render, renderJson, type TemplateValues } from './template.ts';

export interface BuiltRequest {
  url: URL;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: unknown;
  /** Records asked for. */
  asked: number;
  /** Whether the request tells the partner `asked` (a limit parameter, or `{limit}` in a template). */
  limitSent: boolean;
  /** Where the credential travels besides the standard credential headers (a redirect drops it). */
  credential: { headers: string[]; queryParam?: string };
}

function withSlash(base: string): string {
  return base.endsWith('/') ? base : `${base}/`;
}

/** The secret of `auth`: its own reference, else the source's (already resolved as `ctx.token`). */
function credential(
  auth: Exclude<Auth, { type: 'none' | 'oauth2' }>,
  ctx: FetchContext<HttpJobConfig>,
): string | undefined {
  if (auth.secret === undefined) return ctx.token;
  const value = ctx.secret(auth.secret);
  if (value === undefined) throw credentialsMissing(auth.secret, ctx.source.id);
  return value;
}

function applyAuth(
  auth: Auth,
  ctx: FetchContext<HttpJobConfig>,
  url: URL,
  headers: Record<string, string>,
  oauthToken: string | undefined,
): void {
  if (auth.type === 'none') return;
  if (auth.type === 'oauth2') {
    // Without its token (a request built only for its URL) the header is all that is missing.
    if (oauthToken !== undefined) headers.authorization = `Bearer ${oauthToken}`;
    return;
  }
  const secret = credential(auth, ctx);
  if (secret === undefined) {
    // Sending no credential where the config asks for one would only fail later, as a 401.
    throw failure(
      'PermissionDenied',
      'CREDENTIALS_MISSING',
      `source '${ctx.source.id}': auth ${auth.type} needs a secret (auth.secret or --credentials-ref); use auth type none for a public API`,
    );
  }
  if (auth.type === 'bearer') headers.authorization = `Bearer ${secret}`;
  else if (auth.type === 'basic') {
    headers.authorization = `Basic ${Buffer.from(`${auth.username}:${secret}`).toString('base64')}`;
  } else if (auth.in === 'header') headers[auth.name.toLowerCase()] = secret;
  else url.searchParams.set(auth.name, secret);
}

/** How many records to ask the partner for: the engine's limit, within the partner's own. */
export function askFor(config: HttpJobConfig, limit: number): number {
  const p = config.pagination;
  if (p.type === 'page_number') return p.limit;
  if (p.type === 'none') return limit;
  return Math.min(limit, p.limit ?? limit);
}

/**
 * The request for `position` (see paging.ts); `oauthToken`: the access token of an `oauth2` auth
 * (fetched by the caller: `ctx.oauthToken`); `parent`: the parent's values of a child request.
 */
export function buildRequest(
  ctx: FetchContext<HttpJobConfig>,
  position: Position,
  oauthToken?: string,
  parent?: ParentValues,
): BuiltRequest {
  const { config } = ctx.source;
  const p = config.pagination;
  const asked = askFor(config, ctx.limit);
  const values: TemplateValues = {
    date: ctx.businessDate,
    timeZone: ctx.source.timezone,
    sourceId: ctx.source.id,
    cursor: p.type === 'cursor' && typeof position.at === 'string' ? position.at : null,
    page: p.type === 'page_number' ? (typeof position.at === 'number' ? position.at : p.start) : null,
    offset: p.type === 'offset' ? (typeof position.at === 'number' ? position.at : 0) : null,
    limit: asked,
    ...(ctx.window === undefined ? {} : { window: ctx.window }),
    ...(parent === undefined ? {} : { parent }),
  };
  const followsLink = (p.type === 'next_url' || p.type === 'link_header') && typeof position.at === 'string';
  let url: URL;
  if (followsLink) {
    // The partner's link carries its own query; only the credential is added. Checked again here,
    // not only when it came: the source's base URL, its pagination or the run's cursor may have
    // changed since, and the credential must never follow a link to another host.
    url = new URL(
      sameOriginUrl(
        position.at as string,
        new URL(ctx.source.baseUrl),
        ctx.source.baseUrl,
        `partner ${ctx.source.id} (http)`,
      ),
    );
  } else {
    const path = render(config.request.path, values, encodeURIComponent).replace(/^\/+/, '');
    url = new URL(path, withSlash(ctx.source.baseUrl));
    for (const [name, template] of Object.entries(config.request.query)) {
      const value = render(template, values);
      if (value !== '') url.searchParams.set(name, value);
    }
    if (p.type !== 'none' && p.limitParam != null) url.searchParams.set(p.limitParam, String(asked));
    if (p.type === 'cursor' && p.param !== null && values.cursor !== null)
      url.searchParams.set(p.param, values.cursor);
    if (p.type === 'page_number') url.searchParams.set(p.param, String(values.page));
    if (p.type === 'offset') url.searchParams.set(p.param, String(values.offset));
  }
  const headers: Record<string, string> = { accept: 'application/json' };
  for (const [name, template] of Object.entries(config.request.headers)) {
    headers[name.toLowerCase()] = render(template, values);
  }
  headers['idempotency-key'] = ctx.idempotencyKey;
  applyAuth(config.auth, ctx, url, headers, oauthToken);
  const method = config.request.method;
  const { auth } = config;
  return {
    credential:
      auth.type === 'api_key'
        ? auth.in === 'header'
          ? { headers: [auth.name.toLowerCase()] }
          : { headers: [], queryParam: auth.name }
        : { headers: [] },
    url,
    method,
    headers,
    ...(method === 'POST' ? { body: renderJson(config.request.body ?? {}, values) } : {}),
    asked,
    limitSent:
      (p.type !== 'none' && p.limitParam != null) ||
      JSON.stringify([config.request.path, config.request.query, config.request.body ?? null]).includes(
        '{limit}',
      ),
  };
}
