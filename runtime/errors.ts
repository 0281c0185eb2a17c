/**
 * Errors meant for the person running durable-fetch, not for a developer reading a stack trace.
 *
 * Entry points (`npm start`, the CLI, scripts/postinstall.ts) catch these and print only
 * `error.message` (already a complete explanation with the fix) and exit non-zero; any other error
 * is a bug and is printed with its stack.
 */

/**
 * An error whose message alone tells the user what went wrong and how to fix it.
 *
 * Contract: `message` never contains secrets (callers redact URLs with `redactUrl` first) and
 * `code` is a stable, machine-readable identifier (e.g. `TEMPORAL_CLI_NOT_FOUND`) that tests and
 * callers may switch on; message text may change freely.
 */
export class UserFacingError extends Error {
  override readonly name = 'UserFacingError';

  constructor(
    message: string,
    readonly code: string = 'USER_ERROR',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** True for a {@link UserFacingError}, including one from another copy of this module. */
export function isUserFacingError(error: unknown): error is UserFacingError {
  return (
    error instanceof UserFacingError ||
    (error instanceof Error &&
      error.name === 'UserFacingError' &&
      typeof (error as { code?: unknown }).code === 'string')
  );
}

/**
 * The one-line text of any thrown value, for embedding in a larger message.
 * Never throws; does not include the stack.
 */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}
