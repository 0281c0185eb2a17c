/**
 * Credentials references must name a variable of the secrets namespace: a source row can then
 * never send, say, DATABASE_URL or TEMPORAL_API_KEY to its partner as a bearer token.
 */
export const SECRET_REF_PREFIX = 'DF_SECRET_';

/** The shape of a credentials reference: the name of a `DF_SECRET_*` variable, never a secret. */
export const SECRET_REF_RE = /^DF_SECRET_[A-Z0-9_]+$/;

export function isSecretRef(ref: string): boolean {
  return SECRET_REF_RE.test(ref);
}
