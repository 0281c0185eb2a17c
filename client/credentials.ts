/**
 * OAuth2 credentials as operators set and see them (`durable-fetch credentials`,
 * docs/credentials.md). A refresh token is taken only as a value handed in (the CLI reads it from
 * stdin), sealed at once with the credentials key, and never printed, logged or audited; the
 * client secret only by reference (a DF_SECRET_* variable the workers resolve).
 */
import type { PrismaClient } from '../db/client.ts';
import { recordAudit } from '../db/audit.ts';
import { type CredentialRegistration, findCredential, setCredential } from '../db/credentials/credentials.ts';
import { type MasterKey, sealValue } from '../runtime/credential-cipher.ts';
import { UserFacingError } from '../runtime/errors.ts';
import { isSecretRef } from '../runtime/secret-refs.ts';
import { checkActor, checkText } from './audit.ts';

export const CREDENTIAL_TARGET = 'credential';
export const GRANT_TYPES = ['refresh_token', 'client_credentials'] as const;
export const CLIENT_AUTH = ['basic', 'post'] as const;
const ID_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export interface CredentialInput {
  id: string;
  grantType: string;
  tokenUrl: string;
  clientId: string;
  clientSecretRef?: string;
  clientAuth?: string;
  scope?: string;
  audience?: string;
  /** Further token request parameters, never secrets. */
  params?: Record<string, string>;
}

/** What `credentials list` and `show` print: never a token. */
export interface CredentialView {
  id: string;
  grantType: string;
  tokenUrl: string;
  clientId: string;
  clientSecretRef: string | null;
  clientAuth: string;
  scope: string | null;
  audience: string | null;
  status: string;
  statusReason: string | null;
  hasRefreshToken: boolean;
  accessTokenUntil: Date | null;
  /** Since when a token call has been in flight (or died unsaved), if one is. */
  refreshingSince: Date | null;
  generation: number;
  refreshes: number;
  updatedAt: Date;
}

function check(input: CredentialInput, refreshToken: string | undefined): CredentialRegistration {
  const problems: string[] = [];
  if (!ID_RE.test(input.id)) problems.push(`<id>: 1..63 of a-z, 0-9, '-' and '_', got '${input.id}'`);
  if (!(GRANT_TYPES as readonly string[]).includes(input.grantType))
    problems.push(`--grant: one of ${GRANT_TYPES.join(', ')}`);
  let url: URL | undefined;
  try {
    url = new URL(input.tokenUrl);
  } catch {
    problems.push('--token-url: not a URL');
  }
  if (url && !['http:', 'https:'].includes(url.protocol)) problems.push('--token-url: http(s) only');
  if (url && (url.username || url.password)) problems.push('--token-url: no credentials in the URL');
  if (!input.clientId) problems.push('--client-id: required');
  if (input.clientSecretRef !== undefined && !isSecretRef(input.clientSecretRef))
    problems.push(
      '--client-secret-ref: the name of a DF_SECRET_* variable (the secret itself never goes here)',
    );
  const clientAuth = input.clientAuth ?? 'basic';
  if (!(CLIENT_AUTH as readonly string[]).includes(clientAuth))
    problems.push(`--client-auth: one of ${CLIENT_AUTH.join(', ')}`);
  if (input.grantType === 'refresh_token' && !refreshToken)
    problems.push('a refresh_token grant needs its refresh token on stdin');
  if (input.grantType === 'client_credentials' && refreshToken)
    problems.push('a client_credentials grant takes no refresh token (stdin must be empty)');
  if (problems.length > 0) {
    throw new UserFacingError(
      [`cannot set credential '${input.id}':`, ...problems.map((p) => `  ${p}`)].join('\n'),
      'INVALID_INPUT',
    );
  }
  return {
    id: input.id,
    grantType: input.grantType as CredentialRegistration['grantType'],
    tokenUrl: input.tokenUrl,
    clientId: input.clientId,
    clientSecretRef: input.clientSecretRef ?? null,
    clientAuth: clientAuth as CredentialRegistration['clientAuth'],
    scope: input.scope ?? null,
    audience: input.audience ?? null,
    extraParams: input.params ?? {},
  };
}

/**
 * Creates or replaces credential `input.id` with `refreshToken` (sealed with `key`), active again
 * (a credential that needed reauthorization is reauthorized), in one transaction with its audit
 * entry `credential.set` (the registration, whether a refresh token was given; never the token).
 * @throws UserFacingError INVALID_INPUT listing every problem (nothing is written).
 */
export async function setOperatorCredential(
  ctx: { prisma: PrismaClient },
  input: CredentialInput,
  refreshToken: string | undefined,
  key: MasterKey,
  audit: { actor: string; reason: string },
): Promise<CredentialView> {
  const registration = check(input, refreshToken);
  const actor = checkActor(audit.actor);
  const reason = checkText(audit.reason, '--reason', 1000);
  const sealed = refreshToken ? sealValue(key, registration.id, 'refresh_token', refreshToken) : null;
  await ctx.prisma.$transaction(async (tx) => {
    await setCredential(tx, registration, sealed);
    await recordAudit(tx, {
      actor,
      action: 'credential.set',
      targetType: CREDENTIAL_TARGET,
      targetId: registration.id,
      reason,
      details: { ...registration, refreshTokenGiven: sealed !== null },
    });
  });
  return (await showCredential(ctx, registration.id))!;
}

function view(row: NonNullable<Awaited<ReturnType<typeof findCredential>>>): CredentialView {
  return {
    id: row.id,
    grantType: row.grantType,
    tokenUrl: row.tokenUrl,
    clientId: row.clientId,
    clientSecretRef: row.clientSecretRef,
    clientAuth: row.clientAuth,
    scope: row.scope,
    audience: row.audience,
    status: row.status,
    statusReason: row.statusReason,
    hasRefreshToken: row.refreshToken !== null,
    accessTokenUntil: row.accessToken ? row.accessExpiresAt : null,
    refreshingSince: row.refreshIntent ? row.intentStartedAt : null,
    generation: row.generation,
    refreshes: row.refreshes,
    updatedAt: row.updatedAt,
  };
}

/** Credential `id` as operators see it, or undefined. Read-only. */
export async function showCredential(
  ctx: { prisma: PrismaClient },
  id: string,
): Promise<CredentialView | undefined> {
  const row = await findCredential(ctx.prisma, id);
  return row ? view(row) : undefined;
}

/** Every credential, by id. Read-only. */
export async function listCredentials(ctx: { prisma: PrismaClient }): Promise<CredentialView[]> {
  const rows = await ctx.prisma.credential.findMany({ orderBy: { id: 'asc' } });
  return rows.map(view);
}
