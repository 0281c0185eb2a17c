import { applyMigrations, ensureDatabase } from '../prisma/migrator.ts';
import { connectionProblem } from './connection.ts';
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
    // A TLS or pooler problem is said with the setting to check; anything else as the driver said it.
    const problem = connectionProblem(err, url) ?? redactUrlsIn(errorMessage(err));
    throw new UserFacingError(
      `cannot prepare the database at ${redactUrl(url)}: ${problem}`,
      'DB_PREPARE_FAILED',
      { cause: err },
    );
  }
}
