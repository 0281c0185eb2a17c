// A declarative source behind OAuth2 (issue 38), on real Temporal, PostgreSQL and the demo
// partner's strict authorization server: runs across several access-token expiries fetch every
// item the protected API holds, with one token call per token the API saw (none refused, the
// family never revoked), and no token in the workflow histories.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createTokenProvider } from '../activities/credentials/token-provider.ts';
import { findCredential, setCredential } from '../db/credentials/credentials.ts';
import { startPartner, type PartnerServer } from '../partner/server.ts';
import { openValue, parseMasterKey, sealValue } from '../runtime/credential-cipher.ts';
import { jobTestKit, type JobKit } from './helpers/job-kit.ts';

const KEY = parseMasterKey(randomBytes(32).toString('base64'));
const SECRET_REF = 'DF_SECRET_OAUTH_ITEMS_CLIENT';
const CLIENT_SECRET = 'items-client-secret';
const DATES = ['2026-09-01', '2026-09-02', '2026-09-03'];

let partner: PartnerServer;
let kit: JobKit;
let family: string;

void describe('an http source with auth oauth2', () => {
  before(async () => {
    partner = await startPartner({
      port: 0,
      oauth: {
        accessTokenTtlSeconds: 2,
        clients: [{ id: 'items-client', secret: CLIENT_SECRET, rotation: true, reuseIntervalMs: 0 }],
      },
    });
    const secrets: Record<string, string> = { [SECRET_REF]: CLIENT_SECRET };
    kit = await jobTestKit({
      secrets,
      deps: (prisma) => ({
        tokens: createTokenProvider({ prisma, key: KEY, secret: (ref) => secrets[ref], skewMs: 500 }),
      }),
    });
    const grant = partner.oauth.authority.grant('items-client');
    family = grant.family;
    await setCredential(
      kit.prisma,
      {
        id: 'items',
        grantType: 'refresh_token',
        tokenUrl: `${partner.url}/oauth/token`,
        clientId: 'items-client',
        clientSecretRef: SECRET_REF,
        clientAuth: 'basic',
        scope: null,
        audience: null,
        extraParams: {},
      },
      sealValue(KEY, 'items', 'refresh_token', grant.refreshToken),
    );
    await kit.addSource({
      id: 'oauth-items',
      job: 'http',
      baseUrl: partner.url,
      config: {
        request: { path: '/oauth-api/items' },
        auth: { type: 'oauth2', credential: 'items' },
        records: { path: 'items', id: 'id' },
        pagination: { type: 'none' },
      },
    });
  });
  after(async () => {
    await kit?.close();
    await partner?.close();
  });

  it('oauth2 source: runs across token expiries store every item, one token call per token used, none refused', async () => {
    const tokens: string[] = [];
    for (const date of DATES) {
      const run = await kit.run('oauth-items', date);
      assert.equal(run.status, 'succeeded', `${date}: ${run.errorType ?? ''}`);
      const stored = await kit.prisma.fetchedRecord.findMany({
        where: { sourceId: 'oauth-items', fetchRunId: run.row.id },
        select: { externalId: true },
        orderBy: { externalId: 'asc' },
      });
      assert.deepEqual(
        stored.map((r) => r.externalId),
        ['oauth-item-1', 'oauth-item-2', 'oauth-item-3', 'oauth-item-4', 'oauth-item-5'],
      );
      const row = await findCredential(kit.prisma, 'items');
      tokens.push(openValue(KEY, 'items', 'access_token', row!.accessToken!));
      // Past the token's lifetime: the next run needs a new one.
      await new Promise((resolve) => setTimeout(resolve, 2_100));
    }
    const calls = partner.oauth.requests.entries({ endpoint: 'token', family });
    assert.deepEqual(
      calls.map((c) => c.outcome),
      DATES.map(() => 'issued'),
      'one refresh per run, each after the last token expired',
    );
    const api = partner.oauth.requests.entries({ endpoint: 'api' });
    assert.ok(api.length >= DATES.length && api.every((a) => a.status === 200), 'the API refused nothing');
    assert.equal(partner.oauth.authority.family(family)?.revoked, false);
    assert.equal(new Set(tokens).size, DATES.length);
    // No token in any run's history.
    for (const date of DATES) {
      const history = await kit.client.workflow.getHandle(`fetch/http/oauth-items/${date}`).fetchHistory();
      const text = JSON.stringify(history);
      for (const token of tokens) assert.ok(!text.includes(token), `${date}: no access token in its history`);
    }
  });
});
