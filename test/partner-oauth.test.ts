import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { OAuthClientSpec } from '../partner/oauth/index.ts';
import { type PartnerServer, startPartner } from '../partner/server.ts';

interface TokenBody {
  access_token?: string;
  token_type?: string;
  expires_in?: number;
  refresh_token?: string;
  scope?: string;
  error?: string;
  error_description?: string;
}

interface Reply<T> {
  status: number;
  body: T;
  headers: Headers;
}

/** Form encoding of one Basic half, as RFC 6749 §2.3.1 wants it (space as `+`). */
function formEncode(text: string): string {
  return new URLSearchParams({ x: text }).toString().slice(2);
}

function basic(id: string, secret: string): Record<string, string> {
  const pair = `${formEncode(id)}:${formEncode(secret)}`;
  return { authorization: `Basic ${Buffer.from(pair).toString('base64')}` };
}

async function token(
  base: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Reply<TokenBody>> {
  const res = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
    ...(signal ? { signal } : {}),
  });
  return { status: res.status, body: (await res.json()) as TokenBody, headers: res.headers };
}

async function items(base: string, accessToken: string | undefined): Promise<Reply<Record<string, unknown>>> {
  const res = await fetch(`${base}/oauth-api/items`, {
    headers: accessToken === undefined ? {} : { authorization: `Bearer ${accessToken}` },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

/** A refresh by `client_secret_post`. */
function refresh(
  base: string,
  client: OAuthClientSpec,
  refreshToken: string,
  extra: Record<string, string> = {},
) {
  return token(base, {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: client.id,
    client_secret: client.secret,
    ...extra,
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let clients = 0;
/** A client spec of its own for each test (a secret with characters Basic must form-encode). */
function newClient(overrides: Partial<OAuthClientSpec> = {}): OAuthClientSpec {
  clients += 1;
  return { id: `client:${clients} x`, secret: `s3 cr3t+/:%-${clients}`, ...overrides };
}

void describe('partner: OAuth2 authorization server', () => {
  let partner: PartnerServer;
  let dir: string;
  /** Every secret and token value the tests saw, to look for in the ledgers afterwards. */
  const secrets = new Set<string>();
  const seen = (body: TokenBody) => {
    for (const value of [body.access_token, body.refresh_token]) if (value) secrets.add(value);
    return body;
  };
  const seed = (spec: OAuthClientSpec) => {
    secrets.add(spec.secret);
    if (spec.refreshToken) secrets.add(spec.refreshToken);
    partner.oauth.authority.addClient(spec);
    return spec;
  };
  const familyOf = (clientId: string) => {
    const family = partner.oauth.authority.families(clientId)[0];
    assert.ok(family, `a family of ${clientId}`);
    return family;
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'partner-oauth-'));
    partner = await startPartner({ port: 0, ledgerFile: join(dir, 'ledger.jsonl') });
  });
  beforeEach(() => {
    partner.oauth.faults.clear();
    partner.oauth.configure({ accessTokenTtlSeconds: 60, tokenDelayMs: 0 });
  });
  after(async () => {
    await partner.close();
    rmSync(dir, { recursive: true, force: true });
  });

  void it('client_credentials: Basic (form-encoded id and secret) and body both issue a bearer token that opens the API', async () => {
    const client = seed(newClient());
    for (const [method, headers, form] of [
      ['client_secret_basic', basic(client.id, client.secret), {}],
      ['client_secret_post', {}, { client_id: client.id, client_secret: client.secret }],
    ] as const) {
      const reply = await token(partner.url, { grant_type: 'client_credentials', ...form }, headers);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      const body = seen(reply.body);
      assert.deepEqual(Object.keys(body).sort(), ['access_token', 'expires_in', 'scope', 'token_type']);
      assert.equal(body.token_type, 'Bearer');
      assert.equal(body.expires_in, 60);
      assert.equal(body.scope, 'items:read items:write');
      assert.equal(reply.headers.get('cache-control'), 'no-store');
      const api = await items(partner.url, body.access_token);
      assert.equal(api.status, 200);
      assert.equal((api.body.items as unknown[]).length, 5);
      const [entry] = partner.oauth.requests.entries({ clientId: client.id, endpoint: 'token' }).slice(-1);
      assert.equal(entry?.authMethod, method);
      assert.equal(entry?.outcome, 'issued');
      assert.equal(entry?.issuedRefreshTokenId, undefined, 'client credentials get no refresh token');
    }
  });

  void it('a wrong secret, a method the client may not use, or none is invalid_client (401, Basic challenge when Basic was tried)', async () => {
    const client = seed(newClient({ authMethods: ['client_secret_post'] }));
    const grant = { grant_type: 'client_credentials' };
    const wrongBasic = await token(partner.url, grant, basic(client.id, 'wrong'));
    assert.equal(wrongBasic.status, 401);
    assert.equal(wrongBasic.body.error, 'invalid_client');
    assert.match(wrongBasic.headers.get('www-authenticate') ?? '', /^Basic realm=/);
    const rightSecretWrongMethod = await token(partner.url, grant, basic(client.id, client.secret));
    assert.equal(rightSecretWrongMethod.status, 401);
    assert.equal(rightSecretWrongMethod.body.error, 'invalid_client');
    const wrongPost = await token(partner.url, { ...grant, client_id: client.id, client_secret: 'wrong' });
    assert.equal(wrongPost.status, 401);
    assert.equal(wrongPost.body.error, 'invalid_client');
    assert.equal(wrongPost.headers.get('www-authenticate'), null, 'no challenge when Basic was not tried');
    const none = await token(partner.url, grant);
    assert.equal(none.body.error, 'invalid_client');
    const both = await token(
      partner.url,
      { ...grant, client_id: client.id, client_secret: client.secret },
      basic(client.id, client.secret),
    );
    assert.equal(both.status, 400);
    assert.equal(both.body.error, 'invalid_request', 'one authentication method per request');
    assert.equal(partner.oauth.requests.count({ clientId: client.id, outcome: 'invalid_client' }), 3);
    const good = await token(partner.url, { ...grant, client_id: client.id, client_secret: client.secret });
    assert.equal(good.status, 200);
    seen(good.body);
  });

  void it('malformed requests: grant type missing, unknown or not the client’s; JSON body; repeated parameter; secret in the URL', async () => {
    const client = seed(newClient({ grantTypes: ['refresh_token'] }));
    const auth = basic(client.id, client.secret);
    assert.equal((await token(partner.url, {}, auth)).body.error, 'invalid_request');
    assert.equal(
      (await token(partner.url, { grant_type: 'password' }, auth)).body.error,
      'unsupported_grant_type',
    );
    assert.equal(
      (await token(partner.url, { grant_type: 'client_credentials' }, auth)).body.error,
      'unauthorized_client',
    );
    const json = await fetch(`${partner.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ grant_type: 'client_credentials' }),
    });
    assert.equal(json.status, 400);
    assert.equal(((await json.json()) as TokenBody).error, 'invalid_request');
    const repeated = await fetch(`${partner.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...auth },
      body: 'grant_type=refresh_token&refresh_token=a&refresh_token=b',
    });
    assert.equal(((await repeated.json()) as TokenBody).error, 'invalid_request');
    const inUrl = await fetch(`${partner.url}/oauth/token?client_secret=x`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...auth },
      body: 'grant_type=refresh_token&refresh_token=a',
    });
    assert.equal(((await inUrl.json()) as TokenBody).error, 'invalid_request');
    const get = await fetch(`${partner.url}/oauth/token`);
    assert.equal(get.status, 405);
  });

  void it('rotation: a refresh returns a new refresh token; the used one presented again revokes the whole family', async () => {
    const client = seed(newClient({ refreshToken: `rt-initial-${clients}-abcdef` }));
    const initial = client.refreshToken ?? '';
    const first = seen((await refresh(partner.url, client, initial)).body);
    assert.ok(first.refresh_token && first.refresh_token !== initial, 'a new refresh token');
    assert.equal((await items(partner.url, first.access_token)).status, 200);
    const second = seen((await refresh(partner.url, client, first.refresh_token)).body);
    assert.ok(second.refresh_token && second.refresh_token !== first.refresh_token);
    let family = familyOf(client.id);
    assert.equal(family.refreshes, 2);
    assert.deepEqual(
      family.refreshTokens.map((t) => t.status),
      ['used', 'used', 'active'],
    );

    const reused = await refresh(partner.url, client, initial);
    assert.equal(reused.status, 400);
    assert.equal(reused.body.error, 'invalid_grant');
    family = familyOf(client.id);
    assert.equal(family.revoked, true);
    assert.equal(family.revokedReason, 'reuse_detected');
    const [detected] = partner.oauth.requests.entries({ clientId: client.id, reuseDetected: true });
    assert.equal(detected?.family, family.id);
    assert.equal(detected?.refreshTokenId, family.refreshTokens[0]?.id);

    // Every token descended from the grant stops working: the newest refresh token, every access token.
    const latest = await refresh(partner.url, client, second.refresh_token);
    assert.equal(latest.body.error, 'invalid_grant');
    for (const access of [first.access_token, second.access_token]) {
      const api = await items(partner.url, access);
      assert.equal(api.status, 401);
      assert.equal(api.body.error, 'invalid_token');
      assert.match(
        api.headers.get('www-authenticate') ?? '',
        /^Bearer realm="demo-partner", error="invalid_token"/,
      );
    }
    assert.equal(
      partner.oauth.requests.count({ family: family.id, reuseDetected: true }),
      1,
      'detected once',
    );
  });

  void it('rotation off: the refresh token stays valid and is not returned; every refresh counts in its family', async () => {
    const client = seed(newClient({ rotation: false, refreshToken: `rt-static-${clients}-abcdef` }));
    for (let i = 0; i < 3; i++) {
      const reply = await refresh(partner.url, client, client.refreshToken ?? '');
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(seen(reply.body).refresh_token, undefined);
      assert.equal((await items(partner.url, reply.body.access_token)).status, 200);
    }
    const family = familyOf(client.id);
    assert.equal(family.refreshes, 3);
    assert.equal(family.revoked, false);
    assert.deepEqual(
      family.refreshTokens.map((t) => t.status),
      ['active'],
    );
  });

  void it('access tokens expire after the configured lifetime; an unknown or missing token is refused', async () => {
    const short = await startPartner({ port: 0, oauth: { accessTokenTtlSeconds: 1 } });
    try {
      const reply = await token(
        short.url,
        { grant_type: 'client_credentials' },
        basic('demo-oauth-client', 'demo-oauth-secret'),
      );
      assert.equal(reply.body.expires_in, 1);
      assert.equal((await items(short.url, reply.body.access_token)).status, 200);
      await sleep(1100);
      const expired = await items(short.url, reply.body.access_token);
      assert.equal(expired.status, 401);
      assert.equal(expired.body.error_description, 'the access token is expired');
      assert.equal(
        (await items(short.url, 'not-a-token')).body.error_description,
        'the access token is unknown',
      );
      const none = await items(short.url, undefined);
      assert.equal(none.status, 401);
      assert.equal(
        none.headers.get('www-authenticate'),
        'Bearer realm="demo-partner"',
        'no error code without a token',
      );
    } finally {
      await short.close();
    }
  });

  void it('scopes and audience outside the client’s are refused; a refresh may narrow the scope, never widen it', async () => {
    const client = seed(newClient({ scopes: ['items:read'], refreshToken: `rt-scoped-${clients}-abcdef` }));
    const auth = basic(client.id, client.secret);
    const wider = await token(
      partner.url,
      { grant_type: 'client_credentials', scope: 'items:read admin' },
      auth,
    );
    assert.equal(wider.status, 400);
    assert.equal(wider.body.error, 'invalid_scope');
    const audience = await token(
      partner.url,
      { grant_type: 'client_credentials', audience: 'https://elsewhere' },
      auth,
    );
    assert.equal(audience.body.error, 'invalid_target');
    const widerRefresh = await refresh(partner.url, client, client.refreshToken ?? '', {
      scope: 'items:write',
    });
    assert.equal(widerRefresh.body.error, 'invalid_scope');
    assert.equal(familyOf(client.id).refreshes, 0, 'a refused refresh uses nothing up');
    const ok = seen(
      (await refresh(partner.url, client, client.refreshToken ?? '', { scope: 'items:read' })).body,
    );
    assert.equal(ok.scope, 'items:read');

    const writer = seed(newClient({ scopes: ['items:write'] }));
    const writeOnly = seen(
      (await token(partner.url, { grant_type: 'client_credentials' }, basic(writer.id, writer.secret))).body,
    );
    const api = await items(partner.url, writeOnly.access_token);
    assert.equal(api.status, 403);
    assert.match(api.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
  });

  void it('the endpoint delay holds every answer; a caller timing out meanwhile loses a rotation that happened', async () => {
    const client = seed(newClient({ refreshToken: `rt-slow-${clients}-abcdef` }));
    partner.oauth.configure({ tokenDelayMs: 300 });
    const started = performance.now();
    const slow = await token(
      partner.url,
      { grant_type: 'client_credentials' },
      basic(client.id, client.secret),
    );
    assert.equal(slow.status, 200);
    seen(slow.body);
    assert.ok(performance.now() - started >= 290, 'answered after the delay');

    const timedOut = token(
      partner.url,
      { grant_type: 'refresh_token', refresh_token: client.refreshToken ?? '' },
      basic(client.id, client.secret),
      AbortSignal.timeout(100),
    );
    await assert.rejects(timedOut, { name: 'TimeoutError' });
    await sleep(300);
    const [entry] = partner.oauth.requests.entries({ clientId: client.id, grantType: 'refresh_token' });
    assert.equal(entry?.outcome, 'issued');
    assert.equal(entry?.delivery, 'client_gone');
    assert.deepEqual(
      familyOf(client.id).refreshTokens.map((t) => t.status),
      ['used', 'active'],
      'the rotation happened although its answer never arrived',
    );
  });

  void it('drop_after_issue: the caller sees a connection error, the rotation happened (ledger); the old token again revokes', async () => {
    const client = seed(newClient({ refreshToken: `rt-drop-${clients}-abcdef` }));
    const faultId = partner.oauth.faults.add({
      kind: 'drop_after_issue',
      clientId: client.id,
      grantType: 'refresh_token',
    });
    assert.match(faultId, /^oauth-fault-/);
    await assert.rejects(refresh(partner.url, client, client.refreshToken ?? ''), TypeError);
    const [entry] = partner.oauth.requests.entries({ clientId: client.id, grantType: 'refresh_token' });
    assert.equal(entry?.outcome, 'issued');
    assert.equal(entry?.delivery, 'dropped');
    assert.equal(entry?.fault, 'drop_after_issue');
    let family = familyOf(client.id);
    assert.equal(family.refreshes, 1);
    assert.deepEqual(
      family.refreshTokens.map((t) => t.status),
      ['used', 'active'],
    );
    assert.equal(partner.oauth.faults.list().length, 0, 'the fault is spent');

    // With no reuse interval, the stored (old) token is reuse: the family is gone.
    const retry = await refresh(partner.url, client, client.refreshToken ?? '');
    assert.equal(retry.body.error, 'invalid_grant');
    family = familyOf(client.id);
    assert.equal(family.revoked, true);
  });

  void it('drop_before_issue leaves nothing done; a reuse interval lets the lost rotation be fetched again, same pair', async () => {
    const client = seed(newClient({ reuseIntervalMs: 5000, refreshToken: `rt-grace-${clients}-abcdef` }));
    const initial = client.refreshToken ?? '';
    partner.oauth.faults.add({ kind: 'drop_before_issue', clientId: client.id });
    await assert.rejects(refresh(partner.url, client, initial), TypeError);
    assert.equal(familyOf(client.id).refreshes, 0, 'nothing happened');

    partner.oauth.faults.add({ kind: 'drop_after_issue', clientId: client.id });
    await assert.rejects(refresh(partner.url, client, initial), TypeError);
    const again = await refresh(partner.url, client, initial);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    seen(again.body);
    const family = familyOf(client.id);
    assert.equal(family.refreshes, 1, 'a replay is no new refresh');
    assert.equal(family.revoked, false);
    const [issued, replayed] = partner.oauth.requests
      .entries({ clientId: client.id, grantType: 'refresh_token' })
      .slice(-2);
    assert.equal(replayed?.outcome, 'replayed');
    assert.equal(replayed?.issuedRefreshTokenId, issued?.issuedRefreshTokenId, 'the same new refresh token');
    assert.equal(replayed?.accessTokenId, issued?.accessTokenId, 'the same access token');

    // Once the new token is used, the old one is no longer "the previous one": reuse.
    const next = seen((await refresh(partner.url, client, again.body.refresh_token ?? '')).body);
    assert.ok(next.refresh_token);
    assert.equal((await refresh(partner.url, client, initial)).body.error, 'invalid_grant');
    assert.equal(familyOf(client.id).revokedReason, 'reuse_detected');
  });

  void it('admin routes seed a client and an out-of-band grant, set the lifetime, list families and revoke one', async () => {
    const admin = (path: string, method = 'GET', body?: unknown) =>
      fetch(`${partner.url}/_admin/oauth${path}`, {
        method,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }));
    const spec = newClient({ authMethods: ['client_secret_basic'], rotation: true });
    secrets.add(spec.secret);
    const created = await admin('/clients', 'POST', spec);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(JSON.stringify(created.body).includes(spec.secret), false, 'the secret is not echoed');
    assert.equal((await admin('/clients', 'POST', spec)).status, 409);
    const grant = await admin('/grants', 'POST', { clientId: spec.id, scope: 'items:read' });
    assert.equal(grant.status, 201);
    const refreshToken = String(grant.body.refreshToken);
    secrets.add(refreshToken);
    const settings = await admin('/settings', 'PUT', { accessTokenTtlSeconds: 2 });
    assert.equal(settings.body.accessTokenTtlSeconds, 2);
    assert.equal((await admin('/settings', 'PUT', { accessTokenTtlSeconds: 0 })).status, 400);
    const refreshed = seen(
      (
        await token(
          partner.url,
          { grant_type: 'refresh_token', refresh_token: refreshToken },
          basic(spec.id, spec.secret),
        )
      ).body,
    );
    assert.equal(refreshed.expires_in, 2);
    const families = await admin(`/families?clientId=${encodeURIComponent(spec.id)}`);
    const [family] = families.body.families as { id: string; refreshes: number }[];
    assert.equal(family?.id, grant.body.family);
    assert.equal(family?.refreshes, 1);
    const revoked = await admin(`/families/${family?.id}/revoke`, 'POST');
    assert.equal(revoked.body.revoked, true);
    assert.equal(revoked.body.revokedReason, 'admin');
    assert.equal((await items(partner.url, refreshed.access_token)).status, 401);
    const requests = await admin(`/requests?family=${family?.id}`);
    assert.ok((requests.body.requests as unknown[]).length >= 2);
    assert.equal((await admin('/families/fam-999/revoke', 'POST')).status, 404);
  });

  void it('no secret and no token value reaches the ledgers, the ledger file or the admin views', async () => {
    assert.ok(secrets.size > 10, 'the tests above handed out secrets and tokens');
    const views = JSON.stringify([
      partner.ledger.entries(),
      partner.oauth.requests.entries(),
      partner.oauth.authority.clients(),
      partner.oauth.authority.families(),
      readFileSync(join(dir, 'ledger.jsonl'), 'utf8'),
      await (await fetch(`${partner.url}/_admin/oauth/requests`)).text(),
      await (await fetch(`${partner.url}/_admin/oauth/families`)).text(),
      await (await fetch(`${partner.url}/_admin/oauth/clients`)).text(),
    ]);
    for (const secret of secrets) assert.equal(views.includes(secret), false, 'a secret leaked');
    assert.ok(
      partner.ledger.count({ path: '/oauth/token' }) > 10,
      'the token requests are in the partner ledger',
    );
  });
});
