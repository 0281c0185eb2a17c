/**
 * The HTTP client's default limits, apart from http.ts (which loads undici) so that configuration
 * can name them without loading the client.
 */

/** Default of `HttpClientOptions.maxResponseBytes`: 16 MiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
