// OAuth2 access tokens on real PostgreSQL against the demo partner's strict authorization server
// (rotating single-use refresh tokens, reuse detection that revokes the family): one refresh per
// expiry across two "workers" (two providers on two pools), one refresh per 401, the rotation
// window survived (a lost answer, a process killed before saving), refusal ends in
// needs_reauthorization without a loop, and tokens sealed at rest. Judged by the authorization
// server's own ledger and families.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import {
  createTokenProvider,
  NEEDS_REAUTHORIZATION,
  type TokenProvider,
} from '../activities/credentials/token-provider.ts';
import { detailsOf } from '../activities/errors.ts';
import { createPrisma, type PrismaClient } from '../db/client.ts';
import { findCredential, setCredential } from '../db/credentials/credentials.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { openValue, parseMasterKey, sealValue } from '../runtime/credential-cipher.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';

const KEY_TEXT = randomBytes(32).toString('base64');
const KEY = parseMasterKey(KEY_TEXT);
const SECRET = 'client-secret-value';
const secret = (ref: string) => (ref === 'DF_SECRET_OAUTH_CLIENT' ? SECRET : undefined);

let db: TestDatabase;
let partner: PartnerServer;
let second: PrismaClient;

/** A credential `id` on a new token family of `client`; returns the family's id and first refresh token. */
async function newCredential(id: string, client: string) {
  const oauth = partner.oauth;
  const { refreshToken, family } = oauth.authority.grant(client);
  await setCredential(
    db.prisma,
    {
      id,
      grantType: 'refresh_token',
      tokenUrl: `${partner.url}/oauth/token`,
      clientId: client,
      clientSecretRef: 'DF_SECRET_OAUTH_CLIENT',
      clientAuth: 'basic',
      scope: null,
      audience: null,
      extraParams: {},
    },
    sealValue(KEY, id, 'refresh_token', refreshToken),
  );
  return { family, refreshToken };
}

const provider = (prisma: PrismaClient, extra: Partial<Parameters<typeof createTokenProvider>[0]> = {}) =>
  createTokenProvider({ prisma, key: KEY, secret, skewMs: 500, callTimeoutMs: 2_000, pollMs: 20, ...extra });

/** The authorization server's token requests of `family`, by outcome. */
function outcomes(family: string): string[] {
  return partner.oauth.requests.entries({ endpoint: 'token', family }).map((r) => r.outcome);
}

function codeOf(err: unknown): string | undefined {
  return err instanceof ApplicationFailure ? detailsOf(err)?.code : undefined;
}

void describe('OAuth2 credentials (issue 38)', () => {
  before(async () => {
    db = await useTestDatabase();
    second = createPrisma(db.url, { max: 5 });
    partner = await startPartner({
      port: 0,
      oauth: {
        accessTokenTtlSeconds: 2,
        clients: [
          { id: 'strict', secret: SECRET, rotation: true, reuseIntervalMs: 0 },
          { id: 'graceful', secret: SECRET, rotation: true, reuseIntervalMs: 10_000 },
        ],
      },
    });
  });
  after(async () => {
    await partner?.close();
    await second?.$disconnect();
    await db?.drop();
  });

  it('two workers × 20 callers through several expiries: one refresh per expiry, the family never revoked', async () => {
    const { family } = await newCredential('crm-load', 'strict');
    const workers: TokenProvider[] = [provider(db.prisma), provider(second)];
    const tokens = new Set<string>();
    const until = Date.now() + 5_500;
    while (Date.now() < until) {
      const got = await Promise.all(
        Array.from({ length: 20 }, (_, i) => workers[i % 2]!.accessToken('crm-load')),
      );
      for (const token of got) tokens.add(token);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const seen = outcomes(family);
    assert.ok(tokens.size >= 3, `several expiries crossed (${tokens.size} tokens)`);
    assert.deepEqual(
      seen,
      Array.from({ length: tokens.size }, () => 'issued'),
      'one refresh per token, none refused',
    );
    assert.equal(partner.oauth.authority.family(family)?.revoked, false);
    for (const token of tokens) assert.ok(token.length > 0);
  });

  it('a 401 with a still-valid token refreshes once, whatever the number of callers', async () => {
    const { family } = await newCredential('crm-401', 'strict');
    const first = await provider(db.prisma).accessToken('crm-401');
    const workers = [provider(db.prisma), provider(second)];
    const again = await Promise.all(
      Array.from({ length: 10 }, (_, i) => workers[i % 2]!.accessToken('crm-401', { rejected: first })),
    );
    assert.equal(new Set(again).size, 1, 'every caller got the same new token');
    assert.notEqual(again[0], first);
    assert.deepEqual(outcomes(family), ['issued', 'issued']);
  });

  it('an answer lost after the rotation: the stored token is tried again and the provider replays the same pair', async () => {
    const { family } = await newCredential('crm-lost', 'graceful');
    partner.oauth.faults.add({ kind: 'drop_after_issue', clientId: 'graceful', times: 1 });
    const token = await provider(db.prisma).accessToken('crm-lost');
    assert.ok(token);
    assert.deepEqual(outcomes(family), ['issued', 'replayed']);
    assert.equal(partner.oauth.authority.family(family)?.revoked, false);
    // The saved refresh token is the rotated one: the next refresh is accepted, not a reuse.
    const next = await provider(db.prisma).accessToken('crm-lost', { rejected: token });
    assert.notEqual(next, token);
    assert.deepEqual(outcomes(family), ['issued', 'replayed', 'issued']);
  });

  it('an answer lost where the provider allows no reuse: needs_reauthorization at once, and no further call', async () => {
    const { family } = await newCredential('crm-strict-lost', 'strict');
    partner.oauth.faults.add({ kind: 'drop_after_issue', clientId: 'strict', times: 1 });
    const p = provider(db.prisma);
    await assert.rejects(p.accessToken('crm-strict-lost'), (err) => codeOf(err) === NEEDS_REAUTHORIZATION);
    assert.equal(partner.oauth.authority.family(family)?.revoked, true, 'the provider revoked the family');
    const row = await findCredential(db.prisma, 'crm-strict-lost');
    assert.equal(row?.status, 'needs_reauthorization');
    assert.equal(row?.refreshIntent, null);
    const calls = outcomes(family).length;
    assert.equal(calls, 2, 'the lost call and the one retry');
    await assert.rejects(
      provider(second).accessToken('crm-strict-lost'),
      (err) => codeOf(err) === NEEDS_REAUTHORIZATION,
    );
    assert.equal(outcomes(family).length, calls, 'no call while it needs reauthorization');
    // An operator sets a new refresh token: it works again.
    await newCredential('crm-strict-lost', 'strict');
    assert.ok(await provider(db.prisma).accessToken('crm-strict-lost'));
  });

  it('a process killed between the token response and its save: the next refresher takes the intent over', async () => {
    const { family } = await newCredential('crm-killed', 'graceful');
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/credential-child.ts'], {
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        DF_SECRET_CREDENTIALS_KEY: KEY_TEXT,
        DF_TEST_CREDENTIAL: 'crm-killed',
        DF_TEST_CLIENT_SECRET: SECRET,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, sig) => resolve(sig)),
    );
    assert.equal(signal, 'SIGKILL', stderr);
    const left = await findCredential(db.prisma, 'crm-killed');
    assert.notEqual(left?.refreshIntent, null, 'the intent stayed open');
    assert.deepEqual(outcomes(family), ['issued']);
    const token = await provider(db.prisma, { intentTimeoutMs: 1_000 }).accessToken('crm-killed');
    assert.ok(token);
    assert.deepEqual(outcomes(family), ['issued', 'replayed']);
    assert.equal(partner.oauth.authority.family(family)?.revoked, false);
    assert.equal((await findCredential(db.prisma, 'crm-killed'))?.refreshIntent, null);
  });

  it('a client secret missing from the environment: one clear refusal naming the reference, no intent left open, no call', async () => {
    const { family } = await newCredential('crm-no-secret', 'strict');
    await db.prisma.credential.update({
      where: { id: 'crm-no-secret' },
      data: { clientSecretRef: 'DF_SECRET_OAUTH_ABSENT' },
    });
    const err = await provider(db.prisma)
      .accessToken('crm-no-secret')
      .then(
        () => assert.fail('no token without the client secret'),
        (e: unknown) => e,
      );
    assert.equal(codeOf(err), 'CREDENTIALS_MISSING');
    assert.ok(err instanceof ApplicationFailure);
    assert.equal(err.type, 'PermissionDenied');
    assert.match(err.message, /DF_SECRET_OAUTH_ABSENT/);
    assert.ok(!err.message.includes(SECRET), 'names the reference, never a value');
    const row = await findCredential(db.prisma, 'crm-no-secret');
    assert.equal(row?.refreshIntent, null, 'no refresh intent left open');
    assert.equal(row?.refreshes, 0, 'no refresh counted');
    assert.deepEqual(outcomes(family), [], 'the token endpoint was not called');
    // Once the secret is there, the next caller refreshes at once: nothing to wait out.
    const present = provider(db.prisma, {
      secret: (ref) => (ref === 'DF_SECRET_OAUTH_ABSENT' ? SECRET : undefined),
      intentTimeoutMs: 60_000,
    });
    assert.ok(await present.accessToken('crm-no-secret'));
    assert.deepEqual(outcomes(family), ['issued']);
  });

  it('tokens are sealed at rest: the row holds neither in clear, and another key cannot open them', async () => {
    const { refreshToken } = await newCredential('crm-sealed', 'strict');
    const access = await provider(db.prisma).accessToken('crm-sealed');
    const row = await findCredential(db.prisma, 'crm-sealed');
    const raw = Buffer.concat([Buffer.from(row!.accessToken!), Buffer.from(row!.refreshToken!)]).toString(
      'latin1',
    );
    assert.ok(!raw.includes(access) && !raw.includes(refreshToken));
    assert.equal(openValue(KEY, 'crm-sealed', 'access_token', row!.accessToken!), access);
    const other = parseMasterKey(randomBytes(32).toString('base64'));
    assert.throws(
      () => openValue(other, 'crm-sealed', 'access_token', row!.accessToken!),
      /another credentials key/,
    );
    assert.throws(() => openValue(KEY, 'crm-other', 'access_token', row!.accessToken!), /does not open/);
  });
});
