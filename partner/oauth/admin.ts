// The authorization server's admin routes (`/_admin/oauth…`): what tests seed and inspect. The
// one answer that carries a secret is the out-of-band grant's refresh token, as an admin hands one
// over; nothing else returns a secret or a token's value.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { HttpError, readJsonBody, sendJson } from '../http-io.ts';
import { AUTH_METHODS, GRANT_TYPES, MAX_REUSE_INTERVAL_MS } from './authority.ts';
import { InvalidOAuthFaultError } from './faults.ts';
import type { PartnerOAuth } from './index.ts';
import type { OAuthOutcome, OAuthRequestFilter } from './requests.ts';

/** Prefix of the authorization server's admin routes. */
export const OAUTH_ADMIN_PREFIX = '/_admin/oauth';

const clientSpecSchema = z.strictObject({
  id: z.string().min(1).max(128),
  secret: z.string().min(1).max(256),
  authMethods: z.array(z.enum(AUTH_METHODS)).min(1).optional(),
  grantTypes: z.array(z.enum(GRANT_TYPES)).min(1).optional(),
  rotation: z.boolean().optional(),
  reuseIntervalMs: z.int().min(0).max(MAX_REUSE_INTERVAL_MS).optional(),
  scopes: z.array(z.string().min(1)).min(1).optional(),
  audiences: z.array(z.string().min(1)).min(1).optional(),
  refreshToken: z.string().min(8).max(512).optional(),
});

const grantSchema = z.strictObject({
  clientId: z.string().min(1),
  scope: z.string().min(1).optional(),
  audience: z.string().min(1).optional(),
  refreshToken: z.string().min(8).max(512).optional(),
});

const settingsSchema = z.strictObject({
  accessTokenTtlSeconds: z.int().optional(),
  tokenDelayMs: z.int().optional(),
});

/** Parses an admin body; a refused one is a 400 `invalid_<what>`, naming fields, never values. */
async function parsed<T>(req: IncomingMessage, schema: z.ZodType<T>, what: string): Promise<T> {
  const result = schema.safeParse(await readJsonBody(req));
  if (!result.success) {
    const where = result.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`);
    throw new HttpError(400, `invalid_${what}`, where.join('; '));
  }
  return result.data;
}

/** Runs an authority change, answering its `RangeError` as a 400 (409 when something exists). */
function applied<T>(what: string, change: () => T): T {
  try {
    return change();
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    const status = /exists already|already issued/.test(error.message) ? 409 : 400;
    throw new HttpError(status, status === 409 ? 'conflict' : `invalid_${what}`, error.message);
  }
}

function requestFilter(query: URLSearchParams): OAuthRequestFilter {
  const filter: OAuthRequestFilter = {};
  const endpoint = query.get('endpoint');
  if (endpoint === 'token' || endpoint === 'api') filter.endpoint = endpoint;
  else if (endpoint !== null) throw new HttpError(400, 'invalid_filter', '"endpoint" must be token or api');
  for (const name of ['grantType', 'clientId', 'family'] as const) {
    const value = query.get(name);
    if (value) filter[name] = value;
  }
  const outcome = query.get('outcome');
  if (outcome) filter.outcome = outcome as OAuthOutcome;
  const reuse = query.get('reuseDetected');
  if (reuse !== null) filter.reuseDetected = reuse === 'true';
  return filter;
}

/**
 * Serves the authorization server's admin routes (never in a ledger, never faulted):
 * - `GET|PUT /_admin/oauth/settings` → `{ accessTokenTtlSeconds, tokenDelayMs }` (PUT changes either);
 * - `GET /_admin/oauth/clients` → `{ clients }` (no secrets); `POST` a client spec → 201
 *   `{ client, family? }` (`family` when the spec brought an initial `refreshToken`);
 * - `POST /_admin/oauth/grants` `{ clientId, scope?, audience?, refreshToken? }` → 201
 *   `{ refreshToken, family }`: an initial refresh token issued out of band, a new family;
 * - `GET /_admin/oauth/families[?clientId=]` → `{ families }`; `GET /_admin/oauth/families/:id`;
 *   `POST /_admin/oauth/families/:id/revoke` → the family, revoked (reason `admin`);
 * - `GET|DELETE /_admin/oauth/requests[?endpoint=&grantType=&clientId=&family=&outcome=&reuseDetected=]`
 *   → `{ requests }` / `{ cleared }`;
 * - `GET|POST|DELETE /_admin/oauth/faults` → `{ faults }` / 201 `{ id }` / `{ cleared }`.
 * Throws `HttpError` (400 a refused body, 404, 405, 409 a client or refresh token that exists)
 * for the caller to answer.
 */
export async function handleOAuthAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  oauth: PartnerOAuth,
): Promise<void> {
  const method = req.method ?? 'GET';
  const allow = (methods: string[]) => {
    if (!methods.includes(method))
      throw new HttpError(405, 'method_not_allowed', `use ${methods.join(' or ')}`);
  };
  const rest = url.pathname.slice(OAUTH_ADMIN_PREFIX.length);
  const { authority } = oauth;
  switch (rest) {
    case '/settings': {
      allow(['GET', 'PUT']);
      if (method === 'GET') return sendJson(res, 200, oauth.settings);
      const change = await parsed(req, settingsSchema, 'settings');
      return sendJson(
        res,
        200,
        applied('settings', () => oauth.configure(change)),
      );
    }
    case '/clients': {
      allow(['GET', 'POST']);
      if (method === 'GET') return sendJson(res, 200, { clients: authority.clients() });
      const spec = await parsed(req, clientSpecSchema, 'client');
      const client = applied('client', () => authority.addClient(spec));
      const family = spec.refreshToken === undefined ? undefined : authority.families(client.id)[0]?.id;
      return sendJson(res, 201, { client, ...(family ? { family } : {}) });
    }
    case '/grants': {
      allow(['POST']);
      const { clientId, ...options } = await parsed(req, grantSchema, 'grant');
      return sendJson(
        res,
        201,
        applied('grant', () => authority.grant(clientId, options)),
      );
    }
    case '/families':
      allow(['GET']);
      return sendJson(res, 200, {
        families: authority.families(url.searchParams.get('clientId') ?? undefined),
      });
    case '/requests':
      allow(['GET', 'DELETE']);
      if (method === 'DELETE') return sendJson(res, 200, { cleared: oauth.requests.clear() });
      return sendJson(res, 200, { requests: oauth.requests.entries(requestFilter(url.searchParams)) });
    case '/faults':
      allow(['GET', 'POST', 'DELETE']);
      if (method === 'GET') return sendJson(res, 200, { faults: oauth.faults.list() });
      if (method === 'DELETE') return sendJson(res, 200, { cleared: oauth.faults.clear() });
      try {
        return sendJson(res, 201, { id: oauth.faults.add(await readJsonBody(req)) });
      } catch (error) {
        if (error instanceof InvalidOAuthFaultError) throw new HttpError(400, 'invalid_fault', error.message);
        throw error;
      }
  }
  const family = /^\/families\/([^/]+)(\/revoke)?$/.exec(rest);
  if (family?.[1] === undefined) throw new HttpError(404, 'not_found', `no admin route ${url.pathname}`);
  const id = family[1];
  allow(family[2] ? ['POST'] : ['GET']);
  const view = authority.family(id);
  if (!view) throw new HttpError(404, 'not_found', `no token family ${id}`);
  return sendJson(res, 200, family[2] ? authority.revokeFamily(id, 'admin') : view);
}
