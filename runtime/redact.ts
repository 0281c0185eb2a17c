/**
 * Keeping credentials out of messages and logs.
 *
 * Connection URLs (DATABASE_URL, amqp://…) carry passwords; anything that prints one — an error,
 * a log line, `--json` output — passes it through here first.
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
 * Scrubs every `scheme://user:password@` occurrence and every secret query parameter
 * (`?token=…`, `&password=…`) inside arbitrary text (error messages from drivers and HTTP clients
 * sometimes echo the URL). Pure; never throws.
 */
export function redactUrlsIn(text: string): string {
  return text
    .replace(CREDENTIALS_IN_TEXT, (_match, prefix: string) => `${prefix}:${MASK}@`)
    .replace(SECRET_PARAMS_IN_TEXT, (_match, prefix: string) => `${prefix}${MASK}`);
}
