// The demo authorization server's state and rules: its clients, the token families descended from
// each original grant, and what a token request does to them (RFC 6749 §4.4 and §6, refresh-token
// rotation with reuse detection as Auth0 and Okta do it). HTTP lives in token-route.ts.
import { randomBytes } from 'node:crypto';
import { secretEquals } from '../auth.ts';

/** The grants the token endpoint knows (anything else is `unsupported_grant_type`). */
export const GRANT_TYPES = ['client_credentials', 'refresh_token'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

/** The client authentication methods (RFC 6749 §2.3.1, names as in RFC 8414 metadata). */
export const AUTH_METHODS = ['client_secret_basic', 'client_secret_post'] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

/** The audience of the protected demo API (`/oauth-api/…`). */
export const OAUTH_API_AUDIENCE = 'https://partner.demo/oauth-api';

/** The scopes a client gets when its spec names none. */
export const DEFAULT_SCOPES: readonly string[] = ['items:read', 'items:write'];

/** A scope-token (RFC 6749 §3.3): printable ASCII but space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** The error codes of RFC 6749 §5.2, plus RFC 8707's `invalid_target` for a refused audience. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_target';

/** The facts of a refused refresh, by id. */
export interface RefusalFacts {
  family?: string;
  refreshTokenId?: string;
  /** True when the request presented a used refresh token and so revoked its family. */
  reuseDetected?: boolean;
}

/** A refused token request, answered as RFC 6749 §5.2 says. Never carries a secret. */
export class OAuthError extends Error {
  override readonly name = 'OAuthError';
  constructor(
    readonly code: OAuthErrorCode,
    readonly description: string,
    /** What the ledger says of the request: its family and refresh token when known. */
    readonly about: RefusalFacts = {},
  ) {
    super(description);
  }

  /** 401 for `invalid_client` (RFC 6749 §5.2), 400 otherwise. */
  get status(): number {
    return this.code === 'invalid_client' ? 401 : 400;
  }
}

/** A client as an admin registers it. */
export interface OAuthClientSpec {
  id: string;
  secret: string;
  /** How it may authenticate; default both. Any other way is `invalid_client`. */
  authMethods?: AuthMethod[];
  /** The grants it may use; default both. Another is `unauthorized_client`. */
  grantTypes?: GrantType[];
  /** Whether every refresh returns a new refresh token and uses up the old one; default true. */
  rotation?: boolean;
  /**
   * How long (ms) after a rotation the refresh token it used up may be presented again and get the
   * same new pair back instead of revoking the family; default the server's `reuseIntervalMs` (0).
   */
  reuseIntervalMs?: number;
  /** The scopes it may ask for; default `DEFAULT_SCOPES`. */
  scopes?: string[];
  /** The audiences it may ask for, the first being the default; default `[OAUTH_API_AUDIENCE]`. */
  audiences?: string[];
  /**
   * An initial refresh token, as an admin hands one to an operator out of band: starts a family
   * with all the client's scopes and its first audience. Must be unique across clients.
   */
  refreshToken?: string;
}

/** A registered client as shown to tests: everything but its secret. */
export interface OAuthClientView {
  id: string;
  authMethods: AuthMethod[];
  grantTypes: GrantType[];
  rotation: boolean;
  reuseIntervalMs: number;
  scopes: string[];
  audiences: string[];
}

interface Client extends OAuthClientView {
  secret: string;
}

interface AccessToken {
  id: string;
  value: string;
  clientId: string;
  family?: Family;
  scopes: string[];
  audience: string;
  issuedAt: number;
  expiresAt: number;
  revoked: boolean;
}

interface RefreshToken {
  id: string;
  value: string;
  family: Family;
  status: 'active' | 'used' | 'revoked';
  issuedAt: number;
  usedAt?: number;
  /** With rotation: what using this token returned, for a replay within the reuse interval. */
  successor?: { refresh: RefreshToken; access: AccessToken };
}

interface Family {
  id: string;
  clientId: string;
  scopes: string[];
  audience: string;
  createdAt: number;
  refreshes: number;
  revokedAt?: number;
  revokedReason?: 'reuse_detected' | 'admin';
  refreshTokens: RefreshToken[];
  accessTokens: AccessToken[];
}

/** A token family as the admin view shows it: ids and states, never a token's value. */
export interface FamilyView {
  id: string;
  clientId: string;
  scope: string;
  audience: string;
  createdAt: string;
  /** Successful refreshes (replays within the reuse interval not counted). */
  refreshes: number;
  revoked: boolean;
  revokedAt?: string;
  revokedReason?: 'reuse_detected' | 'admin';
  refreshTokens: { id: string; status: RefreshToken['status']; issuedAt: string; usedAt?: string }[];
  accessTokens: { id: string; issuedAt: string; expiresAt: string; revoked: boolean }[];
}

/** A granted token request: the RFC 6749 §5.1 body and what the ledger says of it. */
export interface TokenGrant {
  body: {
    access_token: string;
    token_type: 'Bearer';
    expires_in: number;
    refresh_token?: string;
    scope: string;
  };
  /** True when a refresh within the reuse interval got the earlier answer back. */
  replayed: boolean;
  family?: string;
  /** The refresh token presented, by id. */
  refreshTokenId?: string;
  /** The refresh token returned, by id (absent without rotation: the client keeps its own). */
  issuedRefreshTokenId?: string;
  accessTokenId: string;
}

/** A client as the request presented it, before any check. */
export interface PresentedClient {
  method: AuthMethod;
  id: string;
  secret: string;
}

/** The parameters of a token request the rules read (form fields, decoded). */
export interface TokenParams {
  grant_type?: string;
  scope?: string;
  audience?: string;
  refresh_token?: string;
}

/** What the protected API learns of a bearer token. */
export type AccessCheck =
  | { valid: true; id: string; clientId: string; family?: string; scopes: string[]; audience: string }
  | { valid: false; reason: 'unknown' | 'expired' | 'revoked'; id?: string; family?: string };

/** The lifetimes and pace the token endpoint runs with; changeable while it runs. */
export interface OAuthSettings {
  /** Lifetime of access tokens issued from now on, in seconds (1..86400). */
  accessTokenTtlSeconds: number;
  /** Wait (ms) before every token endpoint answer, after the grant is applied (0..600000). */
  tokenDelayMs: number;
}

/** Longest reuse interval a client may have (one hour). */
export const MAX_REUSE_INTERVAL_MS = 3_600_000;

const ISO = (ms: number) => new Date(ms).toISOString();

function newTokenValue(): string {
  return randomBytes(32).toString('base64url');
}

/** Parses a `scope` parameter; throws `invalid_scope` for an empty or malformed one. Pure. */
function parseScope(scope: string): string[] {
  const tokens = scope.split(' ');
  if (tokens.some((t) => !SCOPE_TOKEN.test(t))) {
    throw new OAuthError('invalid_scope', 'scope must be scope-tokens separated by single spaces');
  }
  return [...new Set(tokens)];
}

/**
 * Checks and completes a client spec. Throws `RangeError` (naming the field, never the secret) for
 * a spec it refuses. Pure.
 */
function clientOf(spec: OAuthClientSpec, defaultReuseIntervalMs: number): Client {
  const need = (ok: boolean, message: string) => {
    if (!ok) throw new RangeError(`oauth client ${JSON.stringify(spec.id)}: ${message}`);
  };
  // RFC 6749 Appendix A.1-A.2: client_id and client_secret are VSCHAR (printable ASCII, space too).
  need(typeof spec.id === 'string' && /^[\x20-\x7E]{1,128}$/.test(spec.id), 'id must be 1..128 VSCHAR');
  need(
    typeof spec.secret === 'string' && /^[\x20-\x7E]{1,256}$/.test(spec.secret),
    'secret must be 1..256 VSCHAR',
  );
  const authMethods = [...new Set(spec.authMethods ?? AUTH_METHODS)];
  need(authMethods.length > 0, 'authMethods must not be empty');
  const grantTypes = [...new Set(spec.grantTypes ?? GRANT_TYPES)];
  need(grantTypes.length > 0, 'grantTypes must not be empty');
  const scopes = [...new Set(spec.scopes ?? DEFAULT_SCOPES)];
  need(
    scopes.length > 0 && scopes.every((s) => SCOPE_TOKEN.test(s)),
    'scopes must be non-empty scope-tokens',
  );
  const audiences = [...new Set(spec.audiences ?? [OAUTH_API_AUDIENCE])];
  need(audiences.length > 0 && audiences.every((a) => /^\S+$/.test(a)), 'audiences must be non-empty');
  const reuseIntervalMs = spec.reuseIntervalMs ?? defaultReuseIntervalMs;
  need(
    Number.isInteger(reuseIntervalMs) && reuseIntervalMs >= 0 && reuseIntervalMs <= MAX_REUSE_INTERVAL_MS,
    `reuseIntervalMs must be an integer in 0..${MAX_REUSE_INTERVAL_MS}`,
  );
  need(
    spec.refreshToken === undefined || /^[\x21-\x7E]{8,512}$/.test(spec.refreshToken),
    'refreshToken must be 8..512 printable characters',
  );
  return {
    id: spec.id,
    secret: spec.secret,
    authMethods,
    grantTypes,
    rotation: spec.rotation ?? true,
    reuseIntervalMs,
    scopes,
    audiences,
  };
}

/**
 * The authorization server: clients, token families and the grant rules. Every method runs to
 * completion synchronously, so two requests never interleave inside a grant (a rotation and a
 * reuse check are atomic, as a real server's transaction makes them). Holds token values in
 * memory only; nothing it returns for display carries one.
 */
export class OAuthAuthority {
  readonly #clients = new Map<string, Client>();
  readonly #families: Family[] = [];
  readonly #refreshTokens = new Map<string, RefreshToken>();
  readonly #accessTokens = new Map<string, AccessToken>();
  readonly #now: () => number;
  readonly #defaultReuseIntervalMs: number;
  readonly settings: OAuthSettings;
  #seq = 0;

  constructor(settings: OAuthSettings, defaultReuseIntervalMs: number, now: () => number = Date.now) {
    this.settings = settings;
    this.#defaultReuseIntervalMs = defaultReuseIntervalMs;
    this.#now = now;
  }

  /**
   * Registers a client (and, with `refreshToken`, its initial family). Throws `RangeError` for an
   * invalid spec, a client id already registered or a refresh token already issued.
   */
  addClient(spec: OAuthClientSpec): OAuthClientView {
    const client = clientOf(spec, this.#defaultReuseIntervalMs);
    if (this.#clients.has(client.id)) throw new RangeError(`oauth client ${client.id} exists already`);
    if (spec.refreshToken !== undefined && this.#refreshTokens.has(spec.refreshToken)) {
      throw new RangeError(`oauth client ${client.id}: refreshToken is already issued`);
    }
    this.#clients.set(client.id, client);
    if (spec.refreshToken !== undefined) this.grant(client.id, { refreshToken: spec.refreshToken });
    return this.#view(client);
  }

  /** Every registered client, without secrets. */
  clients(): OAuthClientView[] {
    return [...this.#clients.values()].map((c) => this.#view(c));
  }

  /**
   * Issues an initial refresh token out of band (as an admin consenting for an operator): a new
   * family for `clientId` with the given (else all) scopes and audience (else the first). Returns
   * the token's value, the one place it is handed over. Throws `RangeError` for an unknown client,
   * a client without the refresh grant, a scope or audience it may not have, or a taken value.
   */
  grant(
    clientId: string,
    options: { scope?: string; audience?: string; refreshToken?: string } = {},
  ): { refreshToken: string; family: string } {
    const client = this.#clients.get(clientId);
    if (!client) throw new RangeError(`no oauth client ${clientId}`);
    if (!client.grantTypes.includes('refresh_token')) {
      throw new RangeError(`oauth client ${clientId} may not use refresh tokens`);
    }
    let scopes: string[];
    let audience: string;
    try {
      scopes = this.#scopesWithin(options.scope, client.scopes);
      audience = this.#audienceWithin(options.audience, client.audiences);
    } catch (error) {
      if (error instanceof OAuthError) throw new RangeError(error.description, { cause: error });
      throw error;
    }
    const value = options.refreshToken ?? newTokenValue();
    if (!/^[\x21-\x7E]{8,512}$/.test(value)) {
      throw new RangeError('refreshToken must be 8..512 printable characters');
    }
    if (this.#refreshTokens.has(value)) throw new RangeError('refreshToken is already issued');
    const now = this.#now();
    const family: Family = {
      id: `fam-${++this.#seq}`,
      clientId,
      scopes,
      audience,
      createdAt: now,
      refreshes: 0,
      refreshTokens: [],
      accessTokens: [],
    };
    this.#families.push(family);
    this.#issueRefresh(family, value);
    return { refreshToken: value, family: family.id };
  }

  /**
   * Authenticates the presented client (RFC 6749 §2.3.1). Throws `invalid_client` for an unknown
   * client, a wrong secret, or a method the client may not use (all alike, so a caller learns
   * nothing of which). Pure but for reading the clients.
   */
  authenticate(presented: PresentedClient): OAuthClientView {
    const client = this.#clients.get(presented.id);
    const ok =
      client !== undefined &&
      client.authMethods.includes(presented.method) &&
      secretEquals(presented.secret, client.secret);
    if (!ok) throw new OAuthError('invalid_client', 'client authentication failed');
    return this.#view(client);
  }

  /**
   * Applies a token request of an authenticated client: `client_credentials` (RFC 6749 §4.4: an
   * access token, no refresh token) or `refresh_token` (§6). With rotation, a refresh uses up the
   * presented token and returns a new one; presenting a used token again revokes its whole family
   * (every refresh and access token descended from the same grant) and is `invalid_grant`, except
   * the token used up last, within the client's reuse interval and while its successor is unused:
   * that gets the same pair back (`replayed`). Without rotation the refresh token stays valid and
   * is not returned. Throws `OAuthError` (never for a valid request). Side effects: issues tokens,
   * uses up or revokes them.
   */
  exchange(clientId: string, params: TokenParams): TokenGrant {
    const client = this.#clients.get(clientId);
    if (!client) throw new OAuthError('invalid_client', 'client authentication failed');
    const grantType = GRANT_TYPES.find((g) => g === params.grant_type);
    if (grantType === undefined) {
      throw new OAuthError(
        'unsupported_grant_type',
        'grant_type must be client_credentials or refresh_token',
      );
    }
    if (!client.grantTypes.includes(grantType)) {
      throw new OAuthError('unauthorized_client', `this client may not use grant_type ${grantType}`);
    }
    if (grantType === 'client_credentials') {
      const scopes = this.#scopesWithin(params.scope, client.scopes);
      const audience = this.#audienceWithin(params.audience, client.audiences);
      const access = this.#issueAccess(client.id, scopes, audience, undefined);
      return { body: this.#body(access), replayed: false, accessTokenId: access.id };
    }
    return this.#refresh(client, params);
  }

  #refresh(client: Client, params: TokenParams): TokenGrant {
    if (params.refresh_token === undefined)
      throw new OAuthError('invalid_request', 'refresh_token is missing');
    const presented = this.#refreshTokens.get(params.refresh_token);
    if (!presented) throw new OAuthError('invalid_grant', 'refresh token is invalid');
    const family = presented.family;
    // RFC 6749 §10.4: a refresh token is bound to its client; another client's is just invalid.
    if (family.clientId !== client.id) throw new OAuthError('invalid_grant', 'refresh token is invalid');
    const facts: RefusalFacts = { family: family.id, refreshTokenId: presented.id };
    if (family.revokedAt !== undefined) {
      throw new OAuthError('invalid_grant', 'refresh token is revoked', facts);
    }
    const now = this.#now();
    if (presented.status === 'used') {
      const successor = presented.successor;
      const withinInterval =
        client.reuseIntervalMs > 0 && now - (presented.usedAt ?? now) <= client.reuseIntervalMs;
      if (withinInterval && successor?.refresh.status === 'active') {
        const access = this.#isLive(successor.access, now)
          ? successor.access
          : this.#issueAccess(client.id, successor.access.scopes, family.audience, family);
        successor.access = access;
        return {
          body: { ...this.#body(access), refresh_token: successor.refresh.value },
          replayed: true,
          family: family.id,
          refreshTokenId: presented.id,
          issuedRefreshTokenId: successor.refresh.id,
          accessTokenId: access.id,
        };
      }
      this.revokeFamily(family.id, 'reuse_detected');
      throw new OAuthError('invalid_grant', 'refresh token was already used', {
        ...facts,
        reuseDetected: true,
      });
    }
    let scopes: string[];
    try {
      // RFC 6749 §6: a refresh may narrow the grant's scope, never widen it.
      scopes = this.#scopesWithin(params.scope, family.scopes);
      this.#audienceWithin(params.audience, [family.audience]);
    } catch (error) {
      if (error instanceof OAuthError) throw new OAuthError(error.code, error.description, facts);
      throw error;
    }
    const access = this.#issueAccess(client.id, scopes, family.audience, family);
    family.refreshes += 1;
    if (!client.rotation) {
      return {
        body: this.#body(access),
        replayed: false,
        family: family.id,
        refreshTokenId: presented.id,
        accessTokenId: access.id,
      };
    }
    const next = this.#issueRefresh(family, newTokenValue());
    presented.status = 'used';
    presented.usedAt = now;
    presented.successor = { refresh: next, access };
    return {
      body: { ...this.#body(access), refresh_token: next.value },
      replayed: false,
      family: family.id,
      refreshTokenId: presented.id,
      issuedRefreshTokenId: next.id,
      accessTokenId: access.id,
    };
  }

  /**
   * Revokes a family: its refresh tokens stop refreshing and its access tokens stop opening the
   * API. Repeat-safe (the first reason stays). Throws `RangeError` for an unknown family.
   */
  revokeFamily(id: string, reason: 'reuse_detected' | 'admin'): FamilyView {
    const family = this.#families.find((f) => f.id === id);
    if (!family) throw new RangeError(`no token family ${id}`);
    if (family.revokedAt === undefined) {
      family.revokedAt = this.#now();
      family.revokedReason = reason;
      for (const token of family.refreshTokens) if (token.status === 'active') token.status = 'revoked';
      for (const token of family.accessTokens) token.revoked = true;
    }
    return this.#familyView(family);
  }

  /** What a bearer token is worth to the protected API, now. Pure but for reading the tokens. */
  checkAccess(value: string): AccessCheck {
    const token = this.#accessTokens.get(value);
    if (!token) return { valid: false, reason: 'unknown' };
    const family = token.family?.id;
    const ids = { id: token.id, ...(family ? { family } : {}) };
    if (token.revoked) return { valid: false, reason: 'revoked', ...ids };
    if (!this.#isLive(token, this.#now())) return { valid: false, reason: 'expired', ...ids };
    return { valid: true, ...ids, clientId: token.clientId, scopes: token.scopes, audience: token.audience };
  }

  /** Token families, oldest first, optionally of one client; ids and states only. */
  families(clientId?: string): FamilyView[] {
    return this.#families
      .filter((f) => clientId === undefined || f.clientId === clientId)
      .map((f) => this.#familyView(f));
  }

  /** One family by id, or undefined. */
  family(id: string): FamilyView | undefined {
    const family = this.#families.find((f) => f.id === id);
    return family && this.#familyView(family);
  }

  #isLive(token: AccessToken, now: number): boolean {
    return !token.revoked && now < token.expiresAt;
  }

  #scopesWithin(scope: string | undefined, allowed: readonly string[]): string[] {
    if (scope === undefined) return [...allowed];
    const asked = parseScope(scope);
    const refused = asked.filter((s) => !allowed.includes(s));
    if (refused.length > 0) throw new OAuthError('invalid_scope', `scope not allowed: ${refused.join(' ')}`);
    return asked;
  }

  #audienceWithin(audience: string | undefined, allowed: readonly string[]): string {
    if (audience === undefined) return allowed[0] ?? OAUTH_API_AUDIENCE;
    if (!allowed.includes(audience)) throw new OAuthError('invalid_target', 'audience not allowed');
    return audience;
  }

  #issueAccess(
    clientId: string,
    scopes: string[],
    audience: string,
    family: Family | undefined,
  ): AccessToken {
    const issuedAt = this.#now();
    const token: AccessToken = {
      id: `at-${++this.#seq}`,
      value: newTokenValue(),
      clientId,
      ...(family ? { family } : {}),
      scopes,
      audience,
      issuedAt,
      expiresAt: issuedAt + this.settings.accessTokenTtlSeconds * 1000,
      revoked: false,
    };
    this.#accessTokens.set(token.value, token);
    family?.accessTokens.push(token);
    return token;
  }

  #issueRefresh(family: Family, value: string): RefreshToken {
    const token: RefreshToken = {
      id: `rt-${++this.#seq}`,
      value,
      family,
      status: 'active',
      issuedAt: this.#now(),
    };
    this.#refreshTokens.set(value, token);
    family.refreshTokens.push(token);
    return token;
  }

  #body(access: AccessToken): TokenGrant['body'] {
    return {
      access_token: access.value,
      token_type: 'Bearer',
      expires_in: Math.max(1, Math.ceil((access.expiresAt - this.#now()) / 1000)),
      scope: access.scopes.join(' '),
    };
  }

  #view(client: Client): OAuthClientView {
    const { secret: _secret, ...view } = client;
    return {
      ...view,
      authMethods: [...view.authMethods],
      grantTypes: [...view.grantTypes],
      scopes: [...view.scopes],
      audiences: [...view.audiences],
    };
  }

  #familyView(family: Family): FamilyView {
    return {
      id: family.id,
      clientId: family.clientId,
      scope: family.scopes.join(' '),
      audience: family.audience,
      createdAt: ISO(family.createdAt),
      refreshes: family.refreshes,
      revoked: family.revokedAt !== undefined,
      ...(family.revokedAt === undefined ? {} : { revokedAt: ISO(family.revokedAt) }),
      ...(family.revokedReason === undefined ? {} : { revokedReason: family.revokedReason }),
      refreshTokens: family.refreshTokens.map((t) => ({
        id: t.id,
        status: t.status,
        issuedAt: ISO(t.issuedAt),
        ...(t.usedAt === undefined ? {} : { usedAt: ISO(t.usedAt) }),
      })),
      accessTokens: family.accessTokens.map((t) => ({
        id: t.id,
        issuedAt: ISO(t.issuedAt),
        expiresAt: ISO(t.expiresAt),
        revoked: t.revoked,
      })),
    };
  }
}
