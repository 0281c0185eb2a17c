/**
 * The history scenario of an OAuth2 source whose credential needs reauthorization: the demo
 * partner's admin revokes the credential's token family, the run's page fetch is refused
 * (`CREDENTIAL_NEEDS_REAUTHORIZATION`) and the run waits; a new grant is set as `credentials set`
 * sets it, and the same page is fetched again and the run completes. The client secret is the
 * planted credential (by reference): the recording proves it never reaches the history.
 */
import { SEARCH_KEYS, startFetch } from '../client/start-fetch.ts';
import { setCredential } from '../db/credentials/credentials.ts';
import { sealValue } from '../runtime/credential-cipher.ts';
import { waitFor } from '../test/helpers/outbox.ts';
import { PLANTED_SECRET, PLANTED_SECRET_REF } from '../test/helpers/history-fixtures.ts';
import {
  DATE,
  HISTORY_CREDENTIALS_KEY,
  type Scenario,
  type ScenarioContext,
  settled,
  source,
  WAIT_MS,
} from './history-scenario-steps.ts';

const CLIENT = 'hist-oauth-client';
const CREDENTIAL = 'hist-oauth';

/** Registers the credential on a new token family of the client; returns the family. */
async function grantAndSet(s: ScenarioContext): Promise<string> {
  const grant = s.partner.oauth.authority.grant(CLIENT);
  await setCredential(
    s.ctx.prisma,
    {
      id: CREDENTIAL,
      grantType: 'refresh_token',
      tokenUrl: `${s.partner.url}/oauth/token`,
      clientId: CLIENT,
      clientSecretRef: PLANTED_SECRET_REF,
      clientAuth: 'basic',
      scope: null,
      audience: null,
      extraParams: {},
    },
    sealValue(HISTORY_CREDENTIALS_KEY, CREDENTIAL, 'refresh_token', grant.refreshToken),
  );
  return grant.family;
}

export const reauthorization: Scenario = {
  name: 'reauthorization',
  async run(s) {
    const sourceId = 'hist-reauth';
    s.partner.oauth.authority.addClient({ id: CLIENT, secret: PLANTED_SECRET, rotation: true });
    s.partner.oauth.authority.revokeFamily(await grantAndSet(s), 'admin');
    await source(s, sourceId, {
      jobType: 'http',
      config: {
        request: { path: '/oauth-api/items' },
        auth: { type: 'oauth2', credential: CREDENTIAL },
        records: { path: 'items', id: 'id' },
        pagination: { type: 'none' },
      },
    });
    const started = await startFetch(s.ctx, { sourceId, date: DATE, requestedBy: 'test' });
    const status = async () =>
      (await started.handle.describe()).typedSearchAttributes.get(SEARCH_KEYS.status);
    await waitFor(
      async () => (await status()) === 'awaiting_reauthorization',
      'FetchStatus awaiting_reauthorization',
      WAIT_MS,
    );
    await grantAndSet(s);
    await settled(started.handle);
    return [{ name: 'fetch-run-reauthorization', workflowId: started.workflowId, runId: started.runId }];
  },
};
