// A run whose OAuth2 credential needs reauthorization waits instead of failing (issue 38), on real
// Temporal and PostgreSQL against the demo partner's strict authorization server, whose admin
// revokes the credential's token family: the run shows `awaiting_reauthorization`, keeps its row
// `running` with no dead letter, tries again after a wait without calling the token endpoint
// again, and goes on by itself once `durable-fetch credentials set` stores a new grant — every
// item of the partner's list stored. A run waiting so still ends at its maximum run time (R9).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import { createTokenProvider } from '../activities/credentials/token-provider.ts';
import { SEARCH_KEYS } from '../client/start-fetch.ts';
import { findCredential, setCredential } from '../db/credentials/credentials.ts';
import { OAUTH_ITEMS } from '../partner/oauth/api-route.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { parseMasterKey, sealValue } from '../runtime/credential-cipher.ts';
import { credentialsCli, setArgs } from './helpers/credentials-cli.ts';
import { jobTestKit, type JobKit } from './helpers/job-kit.ts';
import { waitFor } from './helpers/outbox.ts';
import { fetchSteps } from './helpers/page-fetches.ts';

const KEY_TEXT = randomBytes(32).toString('base64');
const KEY = parseMasterKey(KEY_TEXT);
const CLIENT = 'reauth-client';
const SECRET_REF = 'DF_SECRET_REAUTH_CLIENT';
const CLIENT_SECRET = 'reauth-client-secret';

let partner: PartnerServer;
let kit: JobKit;

/** Registers credential `id` on a new family of the client, and returns the family. */
async function credential(id: string): Promise<string> {
  const grant = partner.oauth.authority.grant(CLIENT);
  await setCredential(
    kit.prisma,
    {
      id,
      grantType: 'refresh_token',
      tokenUrl: `${partner.url}/oauth/token`,
      clientId: CLIENT,
      clientSecretRef: SECRET_REF,
      clientAuth: 'basic',
      scope: null,
      audience: null,
      extraParams: {},
    },
    sealValue(KEY, id, 'refresh_token', grant.refreshToken),
  );
  return grant.family;
}

/** An http source over the partner's protected list, authenticated by credential `id`. */
async function source(sourceId: string, credentialId: string): Promise<void> {
  await kit.addSource({
    id: sourceId,
    job: 'http',
    baseUrl: partner.url,
    config: {
      request: { path: '/oauth-api/items' },
      auth: { type: 'oauth2', credential: credentialId },
      records: { path: 'items', id: 'id' },
      pagination: { type: 'none' },
    },
  });
}

/** The token endpoint's answers to `family`'s requests, oldest first. */
const tokenCalls = (family: string) =>
  partner.oauth.requests.entries({ endpoint: 'token', family }).map((r) => r.outcome);

const statusOf = async (handle: WorkflowHandle) =>
  (await handle.describe()).typedSearchAttributes.get(SEARCH_KEYS.status);

/** How many times the workflow asked for the page (each try after a wait is one more). */
async function fetchTries(handle: WorkflowHandle): Promise<number> {
  const { events } = await handle.fetchHistory();
  return fetchSteps(events ?? []).length;
}

void describe('a run whose OAuth2 credential needs reauthorization', { concurrency: true }, () => {
  before(async () => {
    partner = await startPartner({
      port: 0,
      oauth: { clients: [{ id: CLIENT, secret: CLIENT_SECRET, rotation: true, reuseIntervalMs: 0 }] },
    });
    const secrets: Record<string, string> = { [SECRET_REF]: CLIENT_SECRET };
    kit = await jobTestKit({
      secrets,
      deps: (prisma) => ({
        tokens: createTokenProvider({ prisma, key: KEY, secret: (ref) => secrets[ref] }),
      }),
    });
  });
  after(async () => {
    await kit?.close();
    await partner?.close();
  });

  it('waits (awaiting_reauthorization, no dead letter, no token call per try) and goes on once credentials set gives a new grant', async () => {
    const family = await credential('reauth-items');
    partner.oauth.authority.revokeFamily(family, 'admin');
    await source('reauth-src', 'reauth-items');
    const date = '2026-09-10';
    const result = await kit.runWith('reauth-src', date, async (handle) => {
      await waitFor(
        async () => (await statusOf(handle)) === 'awaiting_reauthorization',
        'FetchStatus awaiting_reauthorization',
        60_000,
      );
      const run = await kit.prisma.fetchRun.findFirstOrThrow({ where: { sourceId: 'reauth-src' } });
      assert.equal(run.status, 'running', 'the run is live, not failed');
      assert.equal(await kit.prisma.deadLetter.count({ where: { sourceId: 'reauth-src' } }), 0);
      assert.equal((await findCredential(kit.prisma, 'reauth-items'))?.status, 'needs_reauthorization');
      assert.deepEqual(tokenCalls(family), ['invalid_grant'], 'one token call: the refused one');
      // The try after the first wait reads the row and calls nobody.
      await waitFor(async () => (await fetchTries(handle)) >= 2, 'a second try of the page', 60_000);
      assert.deepEqual(tokenCalls(family), ['invalid_grant'], 'no token call on the next try');
      assert.equal(await statusOf(handle), 'awaiting_reauthorization');

      // The operator reauthorizes: a new refresh token from the provider, set from stdin.
      const fresh = partner.oauth.authority.grant(CLIENT);
      const set = await credentialsCli(
        kit.db.url,
        setArgs('reauth-items', partner.url, CLIENT, SECRET_REF),
        `${fresh.refreshToken}\n`,
        { DF_SECRET_CREDENTIALS_KEY: KEY_TEXT },
      );
      assert.equal(set.code, 0, set.stderr);
      const ended = await handle.result();
      assert.deepEqual(tokenCalls(fresh.family), ['issued'], 'one refresh with the new grant');
      assert.equal(await statusOf(handle), 'succeeded');
      return ended;
    });
    assert.equal(result.status, 'succeeded');
    const stored = await kit.prisma.fetchedRecord.findMany({
      where: { sourceId: 'reauth-src' },
      select: { externalId: true },
      orderBy: { externalId: 'asc' },
    });
    assert.deepEqual(
      stored.map((r) => r.externalId),
      OAUTH_ITEMS.map((i) => i.id).sort(),
      "every item of the partner's list stored",
    );
    assert.equal(await kit.prisma.deadLetter.count({ where: { sourceId: 'reauth-src' } }), 0);
    assert.deepEqual(tokenCalls(family), ['invalid_grant'], 'the revoked family was never asked again');
  });

  it('a run waiting for reauthorization still ends at its maximum run time, as a dead letter', async () => {
    const family = await credential('reauth-deadline');
    partner.oauth.authority.revokeFamily(family, 'admin');
    await source('reauth-deadline-src', 'reauth-deadline');
    await kit.prisma.source.update({ where: { id: 'reauth-deadline-src' }, data: { maxRunTimeMs: 20_000 } });
    const run = await kit.run('reauth-deadline-src', '2026-09-11');
    assert.equal(run.status, 'dead_lettered');
    assert.equal(run.errorType, 'DeadlineExceeded');
    assert.equal(await kit.prisma.deadLetter.count({ where: { sourceId: 'reauth-deadline-src' } }), 1);
    assert.deepEqual(tokenCalls(family), ['invalid_grant'], 'one token call in the whole wait');
  });
});
