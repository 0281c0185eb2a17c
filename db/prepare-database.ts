import { applyMigrations, ensureDatabase } from '../prisma/migrator.ts';
import { UserFacingError, errorMessage } from '../runtime/errors.ts';
import { redactUrl, redactUrlsIn } from '../runtime/redact.ts';

/**
 * Creates the database when missing and applies pending migrations. Idempotent and safe from
 * several processes at once (the applier takes an advisory lock).
 * @throws UserFacingError when PostgreSQL is unreachable or a migration is refused.
 */
export async function prepareDatabase(
  url: string,
  log: (line: string) => void = () => {},
): Promise<{ created: boolean; applied: string[] }> {
  try {
    const created = await ensureDatabase(url);
    if (created) log(`created database at ${redactUrl(url)}`);
    const { applied } = await applyMigrations(url, { log });
    return { created, applied };
  } catch (err) {
    throw new UserFacingError(
      `cannot prepare the database at ${redactUrl(url)}: ${redactUrlsIn(errorMessage(err))}`,
      'DB_PREPARE_FAILED',
      { cause: err },
    );
  }
}
