// `POST /oauth/token` over HTTP, as strict servers take it (RFC 6749 §2.3.1, §3.2, §5): a
// form-encoded body, one client authentication method per request, JSON answers never cached.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DelayContext } from '../delay-fault.ts';
import { jsonBytes } from '../http-io.ts';
import { type AuthMethod, OAuthError, type PresentedClient, type TokenParams } from './authority.ts';
import type { ActiveOAuthFault } from './faults.ts';
import type { PartnerOAuth } from './index.ts';
import type { Delivery, OAuthRequest } from './requests.ts';

/** Path of the token endpoint. */
export const OAUTH_TOKEN_PATH = '/oauth/token';

/** What the token endpoint needs from the server. */
export interface TokenRouteContext extends DelayContext {
  oauth: PartnerOAuth;
}

const MAX_FORM_BYTES = 16 * 1024;

/** The realm of the `WWW-Authenticate: Basic` challenge. */
const REALM = 'Basic realm="demo-partner", charset="UTF-8"';

/** Parameters that are credentials and so never belong in a URL (OAuth 2.0 Security BCP §4.3.3). */
const NO_QUERY = ['client_secret', 'refresh_token', 'client_assertion'];

/** What the endpoint decided for a request: the answer and its ledger entry. */
interface Decision {
  status: number;
  body: unknown;
  headers: Record<string, string>;
  entry: Omit<OAuthRequest, 'seq' | 'at' | 'delivery'>;
  /** A `drop_*` fault: the socket is destroyed instead of answering. */
  drop?: ActiveOAuthFault;
}

/** A request refused before the authority saw it. */
function invalidRequest(description: string): OAuthError {
  return new OAuthError('invalid_request', description);
}

/** `application/x-www-form-urlencoded` decoding of one Basic credential half (RFC 6749 §2.3.1). */
function formDecode(text: string): string {
  return decodeURIComponent(text.replace(/\+/g, ' '));
}

/** The client in an `Authorization: Basic` header; throws `invalid_client` when it is malformed. */
function basicClient(header: string): PresentedClient {
  const encoded = /^Basic ([A-Za-z0-9+/]+={0,2})$/i.exec(header)?.[1];
  const pair = encoded === undefined ? '' : Buffer.from(encoded, 'base64').toString('utf8');
  const colon = pair.indexOf(':');
  try {
    if (colon < 1) throw new URIError('no id:secret');
    return {
      method: 'client_secret_basic',
      id: formDecode(pair.slice(0, colon)),
      secret: formDecode(pair.slice(colon + 1)),
    };
  } catch {
    throw new OAuthError('invalid_client', 'malformed Basic credentials');
  }
}

/**
 * The client a request presents, by exactly one method. Throws `invalid_request` for two methods
 * at once or a `client_id` that contradicts the header, `invalid_client` for none or a malformed one.
 */
function presentedClient(req: IncomingMessage, form: URLSearchParams): PresentedClient {
  const header = req.headers.authorization;
  const id = form.get('client_id');
  const secret = form.get('client_secret');
  if (header !== undefined && /^Basic\b/i.test(header)) {
    if (secret !== null) throw invalidRequest('use one client authentication method, not Basic and the body');
    const client = basicClient(header);
    if (id !== null && id !== client.id) throw invalidRequest('client_id differs from the Basic credentials');
    return client;
  }
  if (id === null || secret === null) {
    throw new OAuthError('invalid_client', 'client authentication failed');
  }
  return { method: 'client_secret_post', id, secret };
}

/** Reads a form body (at most 16 KiB); throws `invalid_request` when it is larger. */
async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_FORM_BYTES) throw invalidRequest('request body over 16 KiB');
    chunks.push(buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** The facts of a request the ledger may keep: never a secret, never a token's value. */
function requestFacts(req: IncomingMessage, form: URLSearchParams | undefined): Decision['entry'] {
  const grantType = form?.get('grant_type') ?? undefined;
  let client: PresentedClient | undefined;
  try {
    client = form && presentedClient(req, form);
  } catch {
    client = undefined;
  }
  const basic = req.headers.authorization !== undefined && /^Basic\b/i.test(req.headers.authorization);
  const authMethod: AuthMethod | undefined = client?.method ?? (basic ? 'client_secret_basic' : undefined);
  return {
    endpoint: 'token',
    ...(grantType === undefined ? {} : { grantType: grantType.slice(0, 64) }),
    ...(client === undefined ? {} : { clientId: client.id.slice(0, 128) }),
    ...(authMethod === undefined ? {} : { authMethod }),
    status: 0,
    outcome: 'none',
  };
}

function refusal(error: OAuthError, req: IncomingMessage, facts: Decision['entry']): Decision {
  const basic = req.headers.authorization !== undefined && /^Basic\b/i.test(req.headers.authorization);
  const headers: Record<string, string> =
    error.code === 'invalid_client' && basic ? { 'www-authenticate': REALM } : {};
  const { family, refreshTokenId, reuseDetected } = error.about;
  return {
    status: error.status,
    body: { error: error.code, error_description: error.description },
    headers,
    entry: {
      ...facts,
      status: error.status,
      outcome: error.code,
      ...(family === undefined ? {} : { family }),
      ...(refreshTokenId === undefined ? {} : { refreshTokenId }),
      ...(reuseDetected ? { reuseDetected } : {}),
    },
  };
}

/**
 * Decides a token request: parses and checks it, consults the `before` faults, authenticates the
 * client and applies the grant. Side effects: whatever the grant does (tokens issued, rotated,
 * a family revoked); spends a matching fault.
 */
async function decide(req: IncomingMessage, url: URL, oauth: PartnerOAuth): Promise<Decision> {
  let facts = requestFacts(req, undefined);
  try {
    if (req.method !== 'POST') {
      const body = { error: 'invalid_request', error_description: 'use POST' };
      return {
        status: 405,
        body,
        headers: { allow: 'POST' },
        entry: { ...facts, status: 405, outcome: 'method_not_allowed' },
      };
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') {
      throw invalidRequest('the body must be application/x-www-form-urlencoded');
    }
    const form = await readForm(req);
    facts = requestFacts(req, form);
    for (const name of new Set(form.keys())) {
      if (form.getAll(name).length > 1) throw invalidRequest(`parameter ${name} is repeated`);
    }
    const inQuery = NO_QUERY.find((name) => url.searchParams.has(name));
    if (inQuery) throw invalidRequest(`${inQuery} must not be sent in the URL`);
    const client = presentedClient(req, form);
    const before = oauth.faults.take('before', { clientId: client.id, grantType: facts.grantType });
    if (before?.kind === 'drop_before_issue') {
      return { status: 0, body: null, headers: {}, entry: { ...facts, fault: before.kind }, drop: before };
    }
    if (before?.kind === 'unavailable') {
      const body = { error: 'temporarily_unavailable', error_description: 'try again later' };
      const entry: Decision['entry'] = {
        ...facts,
        status: 503,
        outcome: 'temporarily_unavailable',
        fault: before.kind,
      };
      return { status: 503, body, headers: { 'retry-after': '1' }, entry };
    }
    oauth.authority.authenticate(client);
    const params: TokenParams = {};
    for (const name of ['grant_type', 'scope', 'audience', 'refresh_token'] as const) {
      const value = form.get(name);
      if (value !== null) params[name] = value;
    }
    if (params.grant_type === undefined) throw invalidRequest('grant_type is missing');
    const grant = oauth.authority.exchange(client.id, params);
    const entry: Decision['entry'] = {
      ...facts,
      status: 200,
      outcome: grant.replayed ? 'replayed' : 'issued',
      ...(grant.family === undefined ? {} : { family: grant.family }),
      ...(grant.refreshTokenId === undefined ? {} : { refreshTokenId: grant.refreshTokenId }),
      ...(grant.issuedRefreshTokenId === undefined
        ? {}
        : { issuedRefreshTokenId: grant.issuedRefreshTokenId }),
      accessTokenId: grant.accessTokenId,
    };
    const after = oauth.faults.take('after', { clientId: client.id, grantType: facts.grantType });
    const issued: Decision = { status: 200, body: grant.body, headers: {}, entry };
    return after ? { ...issued, entry: { ...entry, fault: after.kind }, drop: after } : issued;
  } catch (error) {
    if (error instanceof OAuthError) return refusal(error, req, facts);
    throw error;
  }
}

/**
 * Serves `POST /oauth/token` (form-encoded `grant_type` = `client_credentials` or
 * `refresh_token`, with `scope`, `audience`, `refresh_token`; the client by HTTP Basic or
 * `client_id` + `client_secret` in the body, one of them). Answers RFC 6749 §5.1 JSON
 * (`access_token`, `token_type: "Bearer"`, `expires_in`, `refresh_token` when one is issued,
 * `scope`) or §5.2 (`{ error, error_description }`: 400, or 401 `invalid_client` with
 * `WWW-Authenticate: Basic` when Basic was tried; 405 for another method), always with
 * `Cache-Control: no-store`. Every answer waits `tokenDelayMs` after the grant is applied.
 * Side effects: the grant's; one entry in the OAuth ledger (its delivery set once known) and one
 * in the partner's ledger per request; a `drop_*` fault destroys the socket instead of answering.
 */
export async function handleToken(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  ctx: TokenRouteContext,
): Promise<void> {
  const decision = await decide(req, url, ctx.oauth);
  const fault = decision.entry.fault;
  const deliver = ctx.oauth.requests.record(decision.entry);
  ctx.ledger.record({
    method: req.method ?? 'GET',
    path: url.pathname,
    status: decision.drop ? 0 : decision.status,
    auth: req.headers.authorization !== undefined,
    ...(fault ? { fault } : {}),
  });
  deliver(await answer(req, res, ctx, decision));
}

/** Waits out the endpoint's delay, then answers, drops or notes that nobody is left to answer. */
async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: TokenRouteContext,
  decision: Decision,
): Promise<Delivery> {
  if (decision.drop?.kind === 'drop_before_issue') {
    req.socket.resetAndDestroy();
    return 'dropped';
  }
  const delayMs = ctx.oauth.settings.tokenDelayMs;
  if (delayMs > 0) {
    let gone = false;
    const onClose = () => {
      if (!ctx.isClosing() && !res.writableEnded) gone = true;
    };
    res.once('close', onClose);
    const fired = await ctx.delay(delayMs);
    res.off('close', onClose);
    if (!fired) {
      req.socket.destroy();
      return 'cancelled';
    }
    if (gone || res.destroyed) return 'client_gone';
  }
  if (decision.drop) {
    req.socket.resetAndDestroy();
    return 'dropped';
  }
  const bytes = jsonBytes(decision.body);
  res.writeHead(decision.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(bytes.length),
    'cache-control': 'no-store',
    pragma: 'no-cache',
    ...decision.headers,
  });
  res.end(bytes);
  return 'sent';
}
