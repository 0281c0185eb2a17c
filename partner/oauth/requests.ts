// The token endpoint's ledger: every request to the demo authorization server and its protected
// API, what it was decided and whether the answer reached the caller, so a test can tell a
// rotation that happened from one the caller saw.
import type { AuthMethod, OAuthErrorCode } from './authority.ts';
import type { OAuthFaultKind } from './faults.ts';

/** How a request ended for the caller. */
export type Delivery =
  /** The answer is being held (the endpoint's delay) or written. */
  | 'pending'
  /** The answer was written whole. */
  | 'sent'
  /** A fault closed the connection instead of answering. */
  | 'dropped'
  /** The caller left before the answer (e.g. its timeout during the endpoint's delay). */
  | 'client_gone'
  /** The partner closed during the delay. */
  | 'cancelled';

/** What a request came to. */
export type OAuthOutcome =
  /** Token endpoint: tokens issued. */
  | 'issued'
  /** Token endpoint: a refresh within the reuse interval got the earlier answer back. */
  | 'replayed'
  /** Protected API: the token opened it. */
  | 'ok'
  | OAuthErrorCode
  /** Protected API refusals (RFC 6750 §3.1). */
  | 'invalid_token'
  | 'insufficient_scope'
  /** An `unavailable` fault. */
  | 'temporarily_unavailable'
  /** A `drop_before_issue` fault: nothing was decided. */
  | 'none'
  | 'method_not_allowed'
  | 'not_found';

/** One request. Never holds a secret or a token's value: tokens appear by id (`rt-3`, `at-4`). */
export interface OAuthRequest {
  /** 1-based, increasing. */
  seq: number;
  /** ISO time the outcome was decided. */
  at: string;
  endpoint: 'token' | 'api';
  /** `grant_type` as sent (at most 64 characters), on token requests. */
  grantType?: string;
  /** The client id as presented (authenticated or not). */
  clientId?: string;
  /** How the client authenticated, when it tried. */
  authMethod?: AuthMethod;
  status: number;
  outcome: OAuthOutcome;
  /** The token family concerned, when known. */
  family?: string;
  /** Refresh requests: the refresh token presented, when it is known. */
  refreshTokenId?: string;
  /** The refresh token returned (absent when none was: client credentials, no rotation). */
  issuedRefreshTokenId?: string;
  /** The access token issued (token endpoint) or presented (API), when known. */
  accessTokenId?: string;
  /** True when this request presented a used refresh token and revoked its family. */
  reuseDetected?: boolean;
  /** The fault that shaped the answer, if any. */
  fault?: OAuthFaultKind;
  delivery: Delivery;
}

/** Filter of `entries`/`count`: every given field must match. */
export interface OAuthRequestFilter {
  endpoint?: OAuthRequest['endpoint'];
  grantType?: string;
  clientId?: string;
  outcome?: OAuthOutcome;
  family?: string;
  reuseDetected?: boolean;
}

function matches(entry: OAuthRequest, filter: OAuthRequestFilter): boolean {
  return (
    (filter.endpoint === undefined || entry.endpoint === filter.endpoint) &&
    (filter.grantType === undefined || entry.grantType === filter.grantType) &&
    (filter.clientId === undefined || entry.clientId === filter.clientId) &&
    (filter.outcome === undefined || entry.outcome === filter.outcome) &&
    (filter.family === undefined || entry.family === filter.family) &&
    (filter.reuseDetected === undefined || (entry.reuseDetected ?? false) === filter.reuseDetected)
  );
}

/** The OAuth request ledger, in memory. */
export class OAuthRequestLog {
  readonly #entries: OAuthRequest[] = [];
  #seq = 0;

  /**
   * Appends an entry and returns a function that sets its delivery later (the answer is decided
   * before it is known whether it arrives).
   */
  record(input: Omit<OAuthRequest, 'seq' | 'at' | 'delivery'>): (delivery: Delivery) => void {
    const entry: OAuthRequest = {
      seq: ++this.#seq,
      at: new Date().toISOString(),
      ...input,
      delivery: 'pending',
    };
    this.#entries.push(entry);
    return (delivery) => {
      entry.delivery = delivery;
    };
  }

  /** Entries matching `filter`, oldest first (copies). */
  entries(filter: OAuthRequestFilter = {}): OAuthRequest[] {
    return this.#entries.filter((e) => matches(e, filter)).map((e) => ({ ...e }));
  }

  /** Number of entries matching `filter`. */
  count(filter: OAuthRequestFilter = {}): number {
    return this.#entries.reduce((n, e) => (matches(e, filter) ? n + 1 : n), 0);
  }

  /** Empties the log; returns how many entries it held. */
  clear(): number {
    const cleared = this.#entries.length;
    this.#entries.length = 0;
    return cleared;
  }
}
