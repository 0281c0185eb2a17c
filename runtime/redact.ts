/**
 * Keeping credentials out of messages and logs.
 *
 * Connection URLs (DATABASE_URL, amqp://…) carry passwords; anything that prints one — an error,
 * a log line, `--json` output — passes it through here first. Text a partner wrote (its error
 * messages) may echo a credential, a link or a person's address: {@link redactFreeText} scrubs it.
 */

const MASK = '***';
/** Query parameters that libpq and friends accept as secrets. */
const SECRET_PARAMS = ['password', 'sslpassword', 'pass', 'secret', 'token', 'api_key', 'apikey'];
/** `scheme://user:password@` inside free text; the password part stops at `@`. */
const CREDENTIALS_IN_TEXT = /([a-z][a-z0-9+.-]*:\/\/[^\s:/@]*):([^\s@/]*)@/gi;
/** `?token=…` / `&password=…` inside free text; the value stops at `&`, `#`, a quote or whitespace. */
const SECRET_PARAMS_IN_TEXT = new RegExp(`([?&](?:${SECRET_PARAMS.join('|')})=)[^&#\\s'"]*`, 'gi');

/**
 * Returns `url` with its password (userinfo and secret query parameters) replaced by `***`.
 *
 * Pure and total: never throws; a string that does not parse as a URL is still scrubbed of any
 * `scheme://user:password@` part. Usernames, hosts, ports and database names are kept because they
 * are what a user needs to see to fix a connection problem.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return redactUrlsIn(url);
  }
  let changed = false;
  if (parsed.password) {
    parsed.password = MASK;
    changed = true;
  }
  for (const key of [...parsed.searchParams.keys()]) {
    if (SECRET_PARAMS.includes(key.toLowerCase())) {
      parsed.searchParams.set(key, MASK);
      changed = true;
    }
  }
  // Re-serialising normalises the URL (e.g. adds a trailing slash); only do it when needed.
  return changed ? parsed.toString().replaceAll(encodeURIComponent(MASK), MASK) : url;
}

/**
 * The values of `url`'s query parameters whose names say secret (`token`, `api_key`…): those
 * {@link redactUrl} masks.
 */
export function secretQueryValues(url: URL): string[] {
  return [...url.searchParams]
    .filter(([key, value]) => value !== '' && SECRET_PARAMS.includes(key.toLowerCase()))
    .map(([, value]) => value);
}

/**
 * Scrubs every `scheme://user:password@` occurrence and every secret query parameter
 * (`?token=…`, `&password=…`) inside arbitrary text (error messages from drivers and HTTP clients
 * sometimes echo the URL). Pure; never throws.
 */
export function redactUrlsIn(text: string): string {
  return text
    .replace(CREDENTIALS_IN_TEXT, (_match, prefix: string) => `${prefix}:${MASK}@`)
    .replace(SECRET_PARAMS_IN_TEXT, (_match, prefix: string) => `${prefix}${MASK}`);
}

/** Marks where an address stood in scrubbed text: it may carry a secret (a signed link, a token). */
const URL_MARK = '[url]';
/** Marks where an email address stood: personal data. */
const EMAIL_MARK = '[email]';
/** Control characters (C0, DEL, C1) and the invisible ones that reorder or hide text. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]+/g;
/** Any absolute URL: `scheme://…` up to whitespace, a quote or an angle bracket. */
const ANY_URL = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]*/gi;
const EMAIL = /[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/gi;
/** Marks where an IP address stood: personal data (a rate limit "exceeded for 203.0.113.7"). */
const IP_MARK = '[ip]';
const IPV4 = /\b(?:\d{1,3}\.){3}\d{1,3}\b/g;
/** IPv6 in full (eight groups) or shortened with `::` (a time of day has neither). */
const IPV6 =
  /(?<![\w:])(?:(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}|(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4})*)?::(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4})*)?)(?![\w:])/gi;
/** `Bearer abc…`: whatever follows the word is the token. */
const BEARER_CREDENTIAL = /\b(bearer\s+)[a-z0-9._~+/=-]+/gi;
/**
 * `Basic dXNlcjpw…`, `Token 9a8b…`: only a credential-looking word after these schemes (8 or more
 * token characters, one of them a digit, `=`, `+` or `/`), as "Basic plan" is English.
 */
const SCHEME_CREDENTIAL = /\b((?:Basic|Digest|Token|ApiKey)\s+)(?=[a-z._~-]*[0-9+/=])[a-z0-9._~+/=-]{8,}/gi;
const JWT = /\beyJ[a-z0-9_-]*\.[a-z0-9_-]+\.[a-z0-9_-]*/gi;
/** `name=value` and `"name": "value"` for names that say secret. */
const SECRET_NAMES =
  '(?:password|passwd|pass|secret|client_secret|token|access_token|refresh_token|id_token|api_key|apikey|api-key|x-api-key|key|signature|sig|session|sessionid|cookie|authorization|auth)';
const SECRET_ASSIGNMENT = new RegExp(`\\b(${SECRET_NAMES}\\s*=\\s*)[^\\s&#,;'"]+`, 'gi');
const SECRET_JSON_MEMBER = new RegExp(`("${SECRET_NAMES}"\\s*:\\s*")[^"]*`, 'gi');
/** A run of 20 or more token characters holding both letters and digits: a key, hash or id. */
const LONG_TOKEN = /[a-z0-9_+/=-]{20,}/gi;
/** Shorter exact values are not secrets, and masking them would mangle the text. */
const MIN_EXACT_VALUE = 4;

/**
 * Scrubs text someone else wrote (a partner's error message) for keeping and showing: control and
 * invisible characters become spaces (no forged log lines, no text that reads other than it
 * prints); then, each replaced by `***` unless said otherwise, every exact value in `secrets` (a
 * source's credential, also URL-encoded; values under 4 characters are left, as they cannot be
 * secrets), every URL (`[url]`), email address (`[email]`), IP address (`[ip]`), credential after
 * an auth scheme (`Bearer …`), JWT, secret-named assignment (`api_key=…`, `"token": "…"`) and
 * long letter-and-digit token (20 characters or more: keys, hashes, long ids). Whitespace is
 * collapsed. Errs towards masking: a long id in the partner's words is lost rather than a secret
 * kept. Pure; never throws; linear enough for a few thousand characters (callers bound the input).
 */
export function redactFreeText(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(CONTROL, ' ');
  const exact = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_EXACT_VALUE) continue;
    exact.add(secret);
    exact.add(encodeURIComponent(secret));
  }
  // Longest first: a value containing another is masked whole.
  for (const value of [...exact].sort((a, b) => b.length - a.length)) out = out.replaceAll(value, MASK);
  return (
    out
      // Punctuation ending a sentence is the text's, not the URL's.
      .replace(ANY_URL, (url) => `${URL_MARK}${/[.,;:!?)\]]*$/.exec(url)?.[0] ?? ''}`)
      .replace(EMAIL, EMAIL_MARK)
      .replace(IPV4, IP_MARK)
      .replace(IPV6, (match) => (match === '::' ? match : IP_MARK))
      .replace(JWT, MASK)
      .replace(BEARER_CREDENTIAL, (_match, prefix: string) => `${prefix}${MASK}`)
      .replace(SCHEME_CREDENTIAL, (_match, prefix: string) => `${prefix}${MASK}`)
      .replace(SECRET_JSON_MEMBER, (_match, prefix: string) => `${prefix}${MASK}`)
      .replace(SECRET_ASSIGNMENT, (_match, prefix: string) => `${prefix}${MASK}`)
      .replace(LONG_TOKEN, (run) => (/[a-z]/i.test(run) && /\d/.test(run) ? MASK : run))
      .replace(/\s+/g, ' ')
      .trim()
  );
}
