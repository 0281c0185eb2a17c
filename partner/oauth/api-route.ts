// The protected API of the demo authorization server: it opens only to access tokens the token
// endpoint issued that are unexpired, unrevoked, for its audience and scope (RFC 6750).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../http-io.ts';
import type { Ledger } from '../ledger.ts';
import { OAUTH_API_AUDIENCE } from './authority.ts';
import type { PartnerOAuth } from './index.ts';
import type { OAuthRequest } from './requests.ts';

/** Prefix of the protected API's routes. */
export const OAUTH_API_PREFIX = '/oauth-api/';

/** Path of its one list. */
export const OAUTH_ITEMS_PATH = '/oauth-api/items';

/** The scope its list needs. */
export const ITEMS_SCOPE = 'items:read';

/** What the list holds: a fixed handful, enough to tell an answer from a refusal (tests judge by it). */
export const OAUTH_ITEMS: readonly { id: string; name: string }[] = Array.from({ length: 5 }, (_, i) => ({
  id: `oauth-item-${i + 1}`,
  name: `Item ${i + 1}`,
}));

/** A refusal's status, RFC 6750 §3 challenge and ledger outcome. */
function refusal(
  status: 401 | 403,
  error: 'invalid_token' | 'insufficient_scope' | undefined,
  description: string,
): { status: number; body: unknown; headers: Record<string, string> } {
  const challenge = [
    'Bearer realm="demo-partner"',
    ...(error ? [`error="${error}"`, `error_description="${description}"`] : []),
    ...(error === 'insufficient_scope' ? [`scope="${ITEMS_SCOPE}"`] : []),
  ].join(', ');
  return {
    status,
    body: { error: error ?? 'unauthorized', error_description: description },
    headers: { 'www-authenticate': challenge },
  };
}

/**
 * Serves `GET /oauth-api/items` → `{ items }` to a bearer access token that is valid now (issued
 * here, unexpired, its family unrevoked), for `OAUTH_API_AUDIENCE` and with scope `items:read`.
 * Else 401 with `WWW-Authenticate: Bearer realm="demo-partner"` (no token: no error code, RFC 6750
 * §3.1) or with `error="invalid_token"` (unknown, expired or revoked, or another audience); 403
 * `error="insufficient_scope"`; 404 for another path, 405 for another method. Side effects: one
 * entry in the OAuth ledger and one in the partner's ledger per request.
 */
export function handleOAuthApi(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  oauth: PartnerOAuth,
  ledger: Ledger,
): void {
  const entry: Omit<OAuthRequest, 'seq' | 'at' | 'delivery'> = { endpoint: 'api', status: 0, outcome: 'ok' };
  let answer: { status: number; body: unknown; headers: Record<string, string> };
  const token = /^Bearer ([\x21-\x7E]+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (url.pathname !== OAUTH_ITEMS_PATH) {
    answer = { status: 404, body: { error: 'not_found' }, headers: {} };
    entry.outcome = 'not_found';
  } else if (req.method !== 'GET') {
    answer = { status: 405, body: { error: 'method_not_allowed' }, headers: { allow: 'GET' } };
    entry.outcome = 'method_not_allowed';
  } else if (token === undefined) {
    answer = refusal(401, undefined, 'send Authorization: Bearer <access token>');
    entry.outcome = 'invalid_token';
  } else {
    const check = oauth.authority.checkAccess(token);
    if (check.id !== undefined) entry.accessTokenId = check.id;
    if (check.family !== undefined) entry.family = check.family;
    if (!check.valid) {
      answer = refusal(401, 'invalid_token', `the access token is ${check.reason}`);
      entry.outcome = 'invalid_token';
    } else if (check.audience !== OAUTH_API_AUDIENCE) {
      answer = refusal(401, 'invalid_token', 'the access token is for another audience');
      entry.outcome = 'invalid_token';
      entry.clientId = check.clientId;
    } else if (!check.scopes.includes(ITEMS_SCOPE)) {
      answer = refusal(403, 'insufficient_scope', `the list needs scope ${ITEMS_SCOPE}`);
      entry.outcome = 'insufficient_scope';
      entry.clientId = check.clientId;
    } else {
      answer = { status: 200, body: { items: OAUTH_ITEMS }, headers: {} };
      entry.clientId = check.clientId;
    }
  }
  oauth.requests.record({ ...entry, status: answer.status })(res.destroyed ? 'client_gone' : 'sent');
  ledger.record({
    method: req.method ?? 'GET',
    path: url.pathname,
    status: answer.status,
    auth: req.headers.authorization !== undefined,
    authorized: answer.status === 200,
  });
  if (!res.destroyed) sendJson(res, answer.status, answer.body, answer.headers);
}
