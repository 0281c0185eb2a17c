// A demo OAuth2 authorization server that behaves like strict real ones: a token endpoint
// (`POST /oauth/token`), a protected API that takes only its access tokens (`/oauth-api/…`), and
// an admin view of its ledger and token families (`/_admin/oauth…`). See docs/demo-partner.md.
import { MAX_DELAY_MS } from '../fault-kinds.ts';
import {
  MAX_REUSE_INTERVAL_MS,
  OAuthAuthority,
  type OAuthClientSpec,
  type OAuthSettings,
} from './authority.ts';
import { OAuthFaults } from './faults.ts';
import { OAuthRequestLog } from './requests.ts';

export {
  AUTH_METHODS,
  type AuthMethod,
  DEFAULT_SCOPES,
  type FamilyView,
  GRANT_TYPES,
  type GrantType,
  OAUTH_API_AUDIENCE,
  type OAuthClientSpec,
  type OAuthClientView,
  type OAuthSettings,
} from './authority.ts';
export { OAUTH_FAULT_KINDS, type OAuthFaultKind, type OAuthFaultSpec } from './faults.ts';
export type { OAuthRequest, OAuthRequestFilter } from './requests.ts';

/** The client registered when the options name none (all fake, for the demo and tests). */
export const DEMO_OAUTH_CLIENT: Readonly<Required<Pick<OAuthClientSpec, 'id' | 'secret' | 'refreshToken'>>> =
  {
    id: 'demo-oauth-client',
    secret: 'demo-oauth-secret',
    refreshToken: 'demo-oauth-refresh-token',
  };

/** How the partner sets its authorization server up (`PartnerOptions.oauth`). */
export interface OAuthOptions {
  /**
   * The registered clients; default one, `DEMO_OAUTH_CLIENT` (both auth methods, both grants,
   * rotation on, scopes `items:read items:write`, audience `OAUTH_API_AUDIENCE`, and its initial
   * refresh token). More can be added while running (`POST /_admin/oauth/clients`).
   */
  clients?: OAuthClientSpec[];
  /** Lifetime of access tokens, in seconds (1..86400); default 60. */
  accessTokenTtlSeconds?: number;
  /**
   * Wait before every token endpoint answer, in ms (0..600000), after the grant is applied: a
   * caller whose timeout ends meanwhile loses tokens that were issued. Default 0.
   */
  tokenDelayMs?: number;
  /** The reuse interval of clients that name none, in ms (0..3600000); default 0 (none). */
  reuseIntervalMs?: number;
}

/** The authorization server's state: what a test reads and switches (the admin API drives the same). */
export interface PartnerOAuth {
  /** Clients, token families and the grant rules. */
  authority: OAuthAuthority;
  /** Every request to the token endpoint and the protected API. */
  requests: OAuthRequestLog;
  /** The token endpoint's faults. */
  faults: OAuthFaults;
  /** The current lifetimes and pace (read-only; change them with `configure`). */
  readonly settings: Readonly<OAuthSettings>;
  /** Changes the access-token lifetime or the endpoint's delay. Throws `RangeError` for a bad value. */
  configure(change: Partial<OAuthSettings>): OAuthSettings;
}

function checkSettings(settings: OAuthSettings): void {
  const { accessTokenTtlSeconds: ttl, tokenDelayMs: delay } = settings;
  if (!(Number.isInteger(ttl) && ttl >= 1 && ttl <= 86_400)) {
    throw new RangeError(`oauth accessTokenTtlSeconds must be an integer in 1..86400, got ${ttl}`);
  }
  if (!(Number.isInteger(delay) && delay >= 0 && delay <= MAX_DELAY_MS)) {
    throw new RangeError(`oauth tokenDelayMs must be an integer in 0..${MAX_DELAY_MS}, got ${delay}`);
  }
}

/** Sets the authorization server up. Throws `RangeError` for an invalid option or client spec. */
export function createOAuth(options: OAuthOptions = {}): PartnerOAuth {
  const settings: OAuthSettings = {
    accessTokenTtlSeconds: options.accessTokenTtlSeconds ?? 60,
    tokenDelayMs: options.tokenDelayMs ?? 0,
  };
  checkSettings(settings);
  const reuseIntervalMs = options.reuseIntervalMs ?? 0;
  if (!(
    Number.isInteger(reuseIntervalMs) &&
    reuseIntervalMs >= 0 &&
    reuseIntervalMs <= MAX_REUSE_INTERVAL_MS
  )) {
    throw new RangeError(`oauth reuseIntervalMs must be an integer in 0..${MAX_REUSE_INTERVAL_MS}`);
  }
  const authority = new OAuthAuthority(settings, reuseIntervalMs);
  for (const client of options.clients ?? [DEMO_OAUTH_CLIENT]) authority.addClient(client);
  return {
    authority,
    requests: new OAuthRequestLog(),
    faults: new OAuthFaults(),
    settings,
    configure(change) {
      const next = { ...settings, ...change };
      checkSettings(next);
      return { ...Object.assign(settings, next) };
    },
  };
}
