// How the partner's guarded routes (rates, catalog) check credentials, in one place: which form a
// request's credential came in, and whether it is the configured secret.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The ways the catalog routes take their token (the `:auth` path segment). */
export const CATALOG_AUTH_KINDS = ['bearer', 'api-key', 'basic'] as const;
export type CatalogAuth = (typeof CATALOG_AUTH_KINDS)[number];

/** The form a credential came in; ledger entries name it, never its value. */
export type CredentialForm = 'bearer' | 'api_key_header' | 'api_key_query' | 'basic';

/** The user name of the catalog's `basic` routes (the token is the password). */
export const BASIC_USER = 'demo';

/** What a request presented, and whether it opens the route. */
export interface CredentialCheck {
  /** The form of the credential considered; absent when none came. */
  credential?: CredentialForm;
  authorized: boolean;
}

/**
 * True when `given` equals `expected`, in time independent of where they differ (a timing
 * side channel would let a caller guess a token byte by byte). Pure.
 */
export function secretEquals(given: string, expected: string): boolean {
  const [a, b] = [Buffer.from(given), Buffer.from(expected)];
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. Pure. */
function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer (\S+)$/.exec(header ?? '')?.[1];
}

/** True when `header` is `Bearer <token>` (any non-empty token when `expected` is undefined). Pure. */
export function bearerAuthorized(header: string | undefined, expected: string | undefined): boolean {
  const token = bearerToken(header);
  if (token === undefined) return false;
  return expected === undefined || secretEquals(token, expected);
}

/** The `user:password` of an `Authorization: Basic …` header, or undefined. Pure. */
function basicPair(header: string | undefined): string | undefined {
  const encoded = /^Basic ([A-Za-z0-9+/]+={0,2})$/.exec(header ?? '')?.[1];
  return encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8');
}

/** Every credential a request carries, by form (an empty header counts as sent: it is a form too). */
function presented(req: IncomingMessage, query: URLSearchParams): Map<CredentialForm, string> {
  const found = new Map<CredentialForm, string>();
  const authorization = req.headers.authorization;
  if (authorization?.startsWith('Bearer ')) found.set('bearer', bearerToken(authorization) ?? '');
  if (authorization?.startsWith('Basic ')) found.set('basic', basicPair(authorization) ?? '');
  const header = req.headers['x-api-key'];
  if (typeof header === 'string') found.set('api_key_header', header);
  const fromQuery = query.get('api_key');
  if (fromQuery !== null) found.set('api_key_query', fromQuery);
  return found;
}

/** The forms each catalog auth kind accepts, the preferred first (a header wins over the query). */
const ACCEPTED: Record<CatalogAuth, readonly CredentialForm[]> = {
  bearer: ['bearer'],
  'api-key': ['api_key_header', 'api_key_query'],
  basic: ['basic'],
};

/** Forms in the order a request's credential is reported when it sent none the route accepts. */
const ANY_FORM: readonly CredentialForm[] = ['bearer', 'basic', 'api_key_header', 'api_key_query'];

/**
 * Checks a catalog request's credential for `kind` against `token`: the accepted form the request
 * used (the header when an api key came both ways), else the first other form it sent, so the
 * ledger shows a client sending the wrong kind. `basic` wants `demo:<token>`. Pure.
 */
export function checkCatalogCredential(
  req: IncomingMessage,
  query: URLSearchParams,
  kind: CatalogAuth,
  token: string,
): CredentialCheck {
  const found = presented(req, query);
  const accepted = ACCEPTED[kind].find((form) => found.has(form));
  if (accepted === undefined) {
    const other = ANY_FORM.find((form) => found.has(form));
    return { ...(other ? { credential: other } : {}), authorized: false };
  }
  const given = found.get(accepted) ?? '';
  const expected = kind === 'basic' ? `${BASIC_USER}:${token}` : token;
  return { credential: accepted, authorized: given !== '' && secretEquals(given, expected) };
}
