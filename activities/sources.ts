import type { ApplicationFailure } from '@temporalio/activity';
import { findSource } from '../db/sources.ts';
import type { PrismaClient, Source } from '../prisma/generated/client.ts';
import { failure } from './errors.ts';

/**
 * A source whether or not it is enabled: undoing a run's effects (compensation) stays allowed
 * after a source is disabled or removed.
 * @throws ApplicationFailure NotFound (deleted).
 */
export async function loadSource(prisma: Pick<PrismaClient, 'source'>, sourceId: string): Promise<Source> {
  const source = await findSource(prisma, sourceId);
  if (!source) throw sourceNotFound(sourceId);
  return source;
}

/** The failure for a source that does not exist (deleted): NotFound `SOURCE_NOT_FOUND`. */
export function sourceNotFound(sourceId: string): ApplicationFailure {
  return failure('NotFound', 'SOURCE_NOT_FOUND', `source '${sourceId}' does not exist`);
}

/**
 * The source of a run, re-checked at run time (R2): it must still exist, be enabled and not removed.
 * @throws ApplicationFailure NotFound (deleted), PermissionDenied `SOURCE_REMOVED` (removed) or
 *   `SOURCE_DISABLED` (disabled).
 */
export async function loadEnabledSource(
  prisma: Pick<PrismaClient, 'source'>,
  sourceId: string,
): Promise<Source> {
  return enabledSource(await findSource(prisma, sourceId), sourceId);
}

/** {@link loadEnabledSource}'s check of a source read by another statement (null: none). */
export function enabledSource(source: Source | null, sourceId: string): Source {
  if (!source) throw sourceNotFound(sourceId);
  // A removed source is disabled too: say it was removed, which no one can undo.
  if (source.removedAt)
    throw failure('PermissionDenied', 'SOURCE_REMOVED', `source '${sourceId}' was removed`);
  if (!source.enabled)
    throw failure('PermissionDenied', 'SOURCE_DISABLED', `source '${sourceId}' is disabled`);
  return source;
}

/**
 * The bearer token of a source, resolved from its credentials reference at call time (R2): the
 * secret itself is never stored, passed through Temporal or logged.
 * @throws ApplicationFailure PermissionDenied when the reference is set but resolves to nothing.
 */
export function bearerToken(source: Source, secret: (ref: string) => string | undefined): string | undefined {
  if (!source.credentialsRef) return undefined;
  const token = secret(source.credentialsRef);
  if (token === undefined) throw credentialsMissing(source.credentialsRef, source.id);
  return token;
}

/** The failure for a credentials reference that resolves to nothing (it names the reference only). */
export function credentialsMissing(ref: string, sourceId: string): ApplicationFailure {
  return failure(
    'PermissionDenied',
    'CREDENTIALS_MISSING',
    `credentials reference ${ref} of source '${sourceId}' is not set (or not a DF_SECRET_* variable)`,
  );
}
