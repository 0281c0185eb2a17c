/**
 * The credential rows (prisma/schema/credentials.prisma): the single-flight refresh's bookkeeping.
 * A refresher locks the row only to decide and to record its intent, never across the token call:
 * the intent is what the others see (and wait on) while the call is in flight, and what the next
 * refresher finds when the process that made the call died before saving its answer.
 */
import type { Credential, PrismaClient } from '../../prisma/generated/client.ts';
import { inTransaction } from '../transaction.ts';

export type { Credential };

/** A credential's row, or null. Read-only. */
export async function findCredential(
  db: Pick<PrismaClient, 'credential'>,
  id: string,
): Promise<Credential | null> {
  return db.credential.findUnique({ where: { id } });
}

/** What a refresher is to do, decided with the row locked. */
export type RefreshClaim =
  /** The stored access token will do (someone refreshed meanwhile). */
  | { kind: 'stored'; row: Credential }
  /** Call the token endpoint under `intent`; `takeover`: an earlier intent died unsaved. */
  | { kind: 'claimed'; row: Credential; intent: string; takeover: boolean }
  /** Another refresher's call is in flight: wait for its answer. */
  | { kind: 'busy'; row: Credential }
  | { kind: 'needs_reauthorization'; row: Credential }
  | { kind: 'missing' };

/**
 * Decides, with the row locked for the moment it takes, whether to refresh `id`: not when
 * `usable(row)` says the stored access token will do, nor while another intent younger than
 * `intentTimeoutMs` (on the database's clock) is open, nor for a credential that needs
 * reauthorization. Otherwise records a new intent (and counts the call) and returns it.
 */
export async function claimRefresh(
  prisma: PrismaClient,
  id: string,
  usable: (row: Credential) => boolean,
  intentTimeoutMs: number,
): Promise<RefreshClaim> {
  return inTransaction(prisma, async (_tx, sql) => {
    const [row] = await sql.$queryRaw<(Credential & { young: boolean })[]>`
      SELECT id, grant_type AS "grantType", token_url AS "tokenUrl", client_id AS "clientId",
             client_secret_ref AS "clientSecretRef", client_auth AS "clientAuth", scope, audience,
             extra_params AS "extraParams", status::text AS status, status_reason AS "statusReason",
             refresh_token AS "refreshToken", access_token AS "accessToken",
             access_expires_at AS "accessExpiresAt", refresh_intent::text AS "refreshIntent",
             intent_started_at AS "intentStartedAt", generation, refreshes,
             created_at AS "createdAt", updated_at AS "updatedAt",
             COALESCE(intent_started_at > now() - make_interval(secs => ${intentTimeoutMs / 1000}), false) AS young
        FROM credential WHERE id = ${id} FOR UPDATE`;
    if (!row) return { kind: 'missing' };
    const { young, ...credential } = row;
    if (credential.status === 'needs_reauthorization')
      return { kind: 'needs_reauthorization', row: credential };
    if (usable(credential)) return { kind: 'stored', row: credential };
    if (credential.refreshIntent !== null && young) return { kind: 'busy', row: credential };
    const [claimed] = await sql.$queryRaw<{ intent: string }[]>`
      UPDATE credential
         SET refresh_intent = gen_random_uuid(), intent_started_at = now(), refreshes = refreshes + 1,
             updated_at = now()
       WHERE id = ${id}
      RETURNING refresh_intent::text AS intent`;
    return {
      kind: 'claimed',
      row: credential,
      intent: claimed!.intent,
      takeover: credential.refreshIntent !== null,
    };
  });
}

/** A token endpoint's answer, sealed for the row. */
export interface SavedTokens {
  accessToken: Uint8Array;
  accessExpiresAt: Date;
  /** The new refresh token when the provider rotated it; undefined keeps the stored one. */
  refreshToken?: Uint8Array;
}

/**
 * Saves the answer of the call made under `intent` and closes the intent, in one statement:
 * only while `intent` is still the row's (a refresher that lost it to a takeover saves nothing).
 * Returns whether it saved.
 */
export async function saveRefresh(
  prisma: PrismaClient,
  id: string,
  intent: string,
  tokens: SavedTokens,
): Promise<boolean> {
  const refresh = tokens.refreshToken === undefined ? null : Buffer.from(tokens.refreshToken);
  const saved = await prisma.$executeRaw`
    UPDATE credential
       SET access_token = ${Buffer.from(tokens.accessToken)}, access_expires_at = ${tokens.accessExpiresAt},
           refresh_token = COALESCE(${refresh}::bytea, refresh_token),
           refresh_intent = NULL, intent_started_at = NULL, generation = generation + 1,
           status = 'active', status_reason = NULL, updated_at = now()
     WHERE id = ${id} AND refresh_intent = ${intent}::uuid`;
  return saved === 1;
}

/**
 * The provider refused the stored refresh token for good (`invalid_grant`): the credential needs
 * reauthorization, its access token is dropped, the intent closed. Only while `intent` is the row's.
 */
export async function refuseRefresh(
  prisma: PrismaClient,
  id: string,
  intent: string,
  reason: string,
): Promise<boolean> {
  const done = await prisma.$executeRaw`
    UPDATE credential
       SET status = 'needs_reauthorization', status_reason = ${reason}, access_token = NULL,
           access_expires_at = NULL, refresh_intent = NULL, intent_started_at = NULL, updated_at = now()
     WHERE id = ${id} AND refresh_intent = ${intent}::uuid`;
  return done === 1;
}

/**
 * Closes `intent` without an answer: the provider answered and nothing was issued (so nothing can
 * have rotated). A call whose outcome is unknown keeps its intent open instead.
 */
export async function releaseRefresh(prisma: PrismaClient, id: string, intent: string): Promise<void> {
  await prisma.$executeRaw`
    UPDATE credential SET refresh_intent = NULL, intent_started_at = NULL, updated_at = now()
     WHERE id = ${id} AND refresh_intent = ${intent}::uuid`;
}

/** A credential's registration (everything but its tokens), as an operator sets it. */
export interface CredentialRegistration {
  id: string;
  grantType: 'client_credentials' | 'refresh_token';
  tokenUrl: string;
  clientId: string;
  clientSecretRef: string | null;
  clientAuth: 'basic' | 'post';
  scope: string | null;
  audience: string | null;
  extraParams: Record<string, string>;
}

/**
 * Creates or replaces the registration of `credential.id` with `refreshToken` (sealed; null for a
 * client-credentials grant): active again, its cached access token and any open intent dropped.
 */
export async function setCredential(
  prisma: Pick<PrismaClient, 'credential'>,
  credential: CredentialRegistration,
  refreshToken: Uint8Array | null,
): Promise<void> {
  const data = {
    ...credential,
    refreshToken: refreshToken === null ? null : Buffer.from(refreshToken),
    status: 'active' as const,
    statusReason: null,
    accessToken: null,
    accessExpiresAt: null,
    refreshIntent: null,
    intentStartedAt: null,
    updatedAt: new Date(),
  };
  await prisma.credential.upsert({ where: { id: credential.id }, create: data, update: data });
}
