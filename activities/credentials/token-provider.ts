/**
 * OAuth2 access tokens for partner calls (docs/credentials.md): one refresh per expiry across
 * every worker, and the rotation window handled like any non-idempotent call.
 *
 * - A token is reused until shortly before it expires: from this process's memory, else from the
 *   credential's row (sealed, runtime/credential-cipher.ts), which every worker shares.
 * - Single flight: within a process one refresh per credential at a time; across processes the
 *   refresher records an intent on the row (db/credentials/credentials.ts) before calling the
 *   token endpoint, and the others wait for its answer instead of calling too.
 * - A refresh token the provider may rotate is spent by the call itself. The answer is saved in
 *   the statement that closes the intent; a process that dies in between leaves the intent open,
 *   and the next refresher, once the intent is older than any call could be, tries the stored
 *   token again (providers with a reuse interval answer it with the same pair). A provider that
 *   answers `invalid_grant` has refused it for good: the credential needs reauthorization, and
 *   every caller hears so at once, without another call, until an operator sets a new token.
 * - A 401 with a still-valid token refreshes once: a caller passes the token that was refused
 *   (`rejected`), and a refresher that finds a newer token stored uses it instead of calling.
 */
import type { PrismaClient } from '../../db/client.ts';
import {
  claimRefresh,
  type Credential,
  findCredential,
  refuseRefresh,
  releaseRefresh,
  saveRefresh,
} from '../../db/credentials/credentials.ts';
import { type CrashPoint, crashPoint } from '../../runtime/crash-points.ts';
import { type MasterKey, openValue, sealValue } from '../../runtime/credential-cipher.ts';
import { NEEDS_REAUTHORIZATION } from '../../contract/error-types.ts';
import { failure } from '../errors.ts';

// The code of the failure every caller gets while a credential needs reauthorization.
export { NEEDS_REAUTHORIZATION } from '../../contract/error-types.ts';

export interface TokenProviderOptions {
  prisma: PrismaClient;
  /** The credentials key (DF_SECRET_CREDENTIALS_KEY). */
  key: MasterKey;
  /** Resolves a DF_SECRET_* reference (the client secret) at call time. */
  secret: (ref: string) => string | undefined;
  /** Refresh this long before a token expires (at most half its lifetime). Default 30 s. */
  skewMs?: number;
  /** How long one token call may take. Default 10 s. */
  callTimeoutMs?: number;
  /** An intent older than this died unsaved: taken over. Default 3 × the call timeout. */
  intentTimeoutMs?: number;
  /** How often a waiting caller looks for another refresher's answer. Default 100 ms. */
  pollMs?: number;
  crashPoint?: CrashPoint;
  now?: () => number;
}

export interface TokenRequest {
  /** The token the partner just refused (401): a new one is wanted, not this one. */
  rejected?: string;
}

export interface TokenProvider {
  /** A valid access token of credential `id`. @throws ApplicationFailure (see the module comment). */
  accessToken(id: string, request?: TokenRequest): Promise<string>;
}

interface Cached {
  token: string;
  /** When to stop using it (its expiry less the skew), in ms since the epoch. */
  useUntil: number;
}

interface TokenAnswer {
  access_token?: unknown;
  expires_in?: unknown;
  refresh_token?: unknown;
  error?: unknown;
}

const ACCESS = 'access_token';
const REFRESH = 'refresh_token';

/** Creates a provider; one per process, shared by every activity. */
export function createTokenProvider(options: TokenProviderOptions): TokenProvider {
  const { prisma, key } = options;
  const skewMs = options.skewMs ?? 30_000;
  const callTimeoutMs = options.callTimeoutMs ?? 10_000;
  const intentTimeoutMs = options.intentTimeoutMs ?? 3 * callTimeoutMs;
  const pollMs = options.pollMs ?? 100;
  const now = options.now ?? Date.now;
  const cache = new Map<string, Cached>();
  const inFlight = new Map<string, Promise<string>>();

  const useUntil = (expiresAt: Date, lifetimeMs: number) =>
    expiresAt.getTime() - Math.min(skewMs, Math.max(0, lifetimeMs) / 2);

  /** The row's access token when it may still be used and is not `rejected`. */
  function storedToken(row: Credential, rejected: string | undefined): Cached | undefined {
    if (!row.accessToken || !row.accessExpiresAt) return undefined;
    const lifetime = row.accessExpiresAt.getTime() - row.updatedAt.getTime();
    const until = useUntil(row.accessExpiresAt, lifetime);
    if (until <= now()) return undefined;
    const token = openValue(key, row.id, ACCESS, row.accessToken);
    return token === rejected ? undefined : { token, useUntil: until };
  }

  function needsReauthorization(row: Credential): never {
    cache.delete(row.id);
    throw failure(
      'PermissionDenied',
      NEEDS_REAUTHORIZATION,
      `credential ${row.id} needs reauthorization (${row.statusReason ?? 'refused by its provider'}): ` +
        `set a new token with \`durable-fetch credentials set ${row.id}\``,
    );
  }

  /**
   * The client secret of `row` from its reference, undefined when it names none. Checked before
   * an intent is recorded: a refusal here must leave nothing for the other refreshers to wait out.
   * @throws ApplicationFailure PermissionDenied `CREDENTIALS_MISSING`, naming the reference only.
   */
  function clientSecret(row: Credential): string | undefined {
    if (!row.clientSecretRef) return undefined;
    const secret = options.secret(row.clientSecretRef);
    if (secret === undefined) {
      throw failure(
        'PermissionDenied',
        'CREDENTIALS_MISSING',
        `credential ${row.id}: its client secret ${row.clientSecretRef} is not set in this process's environment`,
      );
    }
    return secret;
  }

  /** One token call; `unknown` when it may have reached the provider without an answer here. */
  async function call(row: Credential, refreshToken: string | undefined, secret: string | undefined) {
    const body = new URLSearchParams();
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (row.grantType === 'refresh_token') {
      body.set('grant_type', 'refresh_token');
      body.set('refresh_token', refreshToken ?? '');
    } else {
      body.set('grant_type', 'client_credentials');
    }
    if (row.scope) body.set('scope', row.scope);
    if (row.audience) body.set('audience', row.audience);
    for (const [name, value] of Object.entries((row.extraParams ?? {}) as Record<string, string>))
      body.set(name, value);
    if (row.clientAuth === 'post') {
      body.set('client_id', row.clientId);
      if (secret !== undefined) body.set('client_secret', secret);
    } else {
      // RFC 6749 §2.3.1: each part form-urlencoded, then Basic.
      const part = (v: string) => encodeURIComponent(v).replaceAll('%20', '+');
      headers.authorization = `Basic ${Buffer.from(`${part(row.clientId)}:${part(secret ?? '')}`).toString('base64')}`;
    }
    try {
      const res = await fetch(row.tokenUrl, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(callTimeoutMs),
      });
      const answer = (await res.json().catch(() => ({}))) as TokenAnswer;
      return { status: res.status, answer };
    } catch {
      // The request may have reached the provider: a rotation may have happened.
      return { status: undefined, answer: {} as TokenAnswer };
    }
  }

  /** Refreshes under `intent`; returns the new token, or throws. */
  async function refreshUnder(row: Credential, intent: string): Promise<Cached> {
    let secret: string | undefined;
    try {
      // The row as claimed: re-registered since it was read, it may name another reference.
      secret = clientSecret(row);
    } catch (err) {
      await releaseRefresh(prisma, row.id, intent);
      throw err;
    }
    const stored = row.refreshToken ? openValue(key, row.id, REFRESH, row.refreshToken) : undefined;
    if (row.grantType === 'refresh_token' && stored === undefined) {
      await refuseRefresh(prisma, row.id, intent, 'no refresh token is stored');
      return needsReauthorization({ ...row, statusReason: 'no refresh token is stored' });
    }
    let outcome = await call(row, stored, secret);
    // Unknown outcome: the stored token may be spent. Try it once more at once, as a taker-over
    // would: a provider with a reuse interval answers with the same pair.
    if (outcome.status === undefined && row.grantType === 'refresh_token')
      outcome = await call(row, stored, secret);
    crashPoint(options.crashPoint, 'credential-after-token-response');
    const { status, answer } = outcome;
    if (status === 200 && typeof answer.access_token === 'string') {
      const lifetimeMs = (typeof answer.expires_in === 'number' ? answer.expires_in : 3600) * 1000;
      const expiresAt = new Date(now() + lifetimeMs);
      const sealed = {
        accessToken: sealValue(key, row.id, ACCESS, answer.access_token),
        accessExpiresAt: expiresAt,
        ...(typeof answer.refresh_token === 'string'
          ? { refreshToken: sealValue(key, row.id, REFRESH, answer.refresh_token) }
          : {}),
      };
      if (!(await saveRefresh(prisma, row.id, intent, sealed))) {
        // Taken over while this call ran long: the row holds what the taker-over got.
        throw failure(
          'UpstreamUnavailable',
          'TOKEN_REFRESH_SUPERSEDED',
          `credential ${row.id}: refresh taken over`,
        );
      }
      return { token: answer.access_token, useUntil: useUntil(expiresAt, lifetimeMs) };
    }
    if (status === undefined) {
      // Still unknown: the intent stays open; the next refresher takes it over when it is old.
      throw failure(
        'UpstreamUnavailable',
        'TOKEN_ENDPOINT_UNREACHABLE',
        `credential ${row.id}: the token endpoint did not answer`,
      );
    }
    const error = typeof answer.error === 'string' ? answer.error.slice(0, 60) : `HTTP_${status}`;
    if (error === 'invalid_grant' && row.grantType === 'refresh_token') {
      const reason = 'the provider refused the refresh token (invalid_grant)';
      await refuseRefresh(prisma, row.id, intent, reason);
      return needsReauthorization({ ...row, statusReason: reason });
    }
    // Answered without issuing anything: nothing rotated.
    await releaseRefresh(prisma, row.id, intent);
    if (status === 429 || status >= 500) {
      throw failure(
        'UpstreamUnavailable',
        'TOKEN_ENDPOINT_UNAVAILABLE',
        `credential ${row.id}: token endpoint ${status}`,
      );
    }
    throw failure(
      'PermissionDenied',
      'TOKEN_REFUSED',
      `credential ${row.id}: token endpoint refused (${error})`,
    );
  }

  async function obtain(id: string, rejected: string | undefined): Promise<string> {
    const deadline = now() + intentTimeoutMs + callTimeoutMs;
    for (;;) {
      const row = await findCredential(prisma, id);
      if (!row) throw failure('InvalidInput', 'CREDENTIAL_UNKNOWN', `credential ${id} does not exist`);
      if (row.status === 'needs_reauthorization') return needsReauthorization(row);
      const fresh = storedToken(row, rejected);
      if (fresh) {
        cache.set(id, fresh);
        return fresh.token;
      }
      // Refused here, before an intent is recorded, when this process lacks the client secret.
      clientSecret(row);
      const claim = await claimRefresh(
        prisma,
        id,
        (locked) => storedToken(locked, rejected) !== undefined,
        intentTimeoutMs,
      );
      if (claim.kind === 'missing') continue;
      if (claim.kind === 'needs_reauthorization') return needsReauthorization(claim.row);
      if (claim.kind === 'claimed') {
        const got = await refreshUnder(claim.row, claim.intent);
        cache.set(id, got);
        return got.token;
      }
      // 'stored' (read again above) or 'busy': wait for the other refresher's answer.
      if (claim.kind === 'busy') {
        if (now() > deadline) {
          throw failure(
            'UpstreamUnavailable',
            'TOKEN_REFRESH_WAIT',
            `credential ${id}: another refresh is still running`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    }
  }

  return {
    async accessToken(id, request = {}) {
      const cached = cache.get(id);
      if (cached && cached.useUntil > now() && cached.token !== request.rejected) return cached.token;
      const key = `${id}\0${request.rejected ?? ''}`;
      let pending = inFlight.get(key);
      if (!pending) {
        pending = obtain(id, request.rejected).finally(() => inFlight.delete(key));
        inFlight.set(key, pending);
      }
      return pending;
    },
  };
}
