import { parseArgs } from 'node:util';
import { DEMO_OAUTH_CLIENT, type OAuthOptions } from './oauth/index.ts';
import { startPartner } from './server.ts';

/** The demo OAuth client as the flags change it (undefined flags keep the defaults). */
function oauthOptions(values: Record<string, string | undefined>): OAuthOptions {
  const number = (name: string) => (values[name] === undefined ? undefined : Number(values[name]));
  const options: OAuthOptions = {
    clients: [
      {
        ...DEMO_OAUTH_CLIENT,
        secret: values['oauth-client-secret'] ?? DEMO_OAUTH_CLIENT.secret,
        refreshToken: values['oauth-refresh-token'] ?? DEMO_OAUTH_CLIENT.refreshToken,
      },
    ],
  };
  const ttl = number('oauth-access-ttl-s');
  const delay = number('oauth-token-delay-ms');
  const reuse = number('oauth-reuse-interval-ms');
  if (ttl !== undefined) options.accessTokenTtlSeconds = ttl;
  if (delay !== undefined) options.tokenDelayMs = delay;
  if (reuse !== undefined) options.reuseIntervalMs = reuse;
  return options;
}

/**
 * Standalone demo partner:
 * `tsx partner/main.ts [--port 4010] [--host 127.0.0.1] [--ledger-file path] [--late-effect-ms n]
 * [--rates-token t] [--catalog-token t] [--oauth-client-secret s] [--oauth-refresh-token t]
 * [--oauth-access-ttl-s n] [--oauth-token-delay-ms n] [--oauth-reuse-interval-ms n]` (see
 * `PartnerOptions.lateEffectMs`, `.ratesToken`, `.catalogToken` and `.oauth`: `--oauth-client-secret`
 * and `--oauth-refresh-token` set those of the demo client `demo-oauth-client`).
 * Runs until SIGINT/SIGTERM, then closes cleanly. Exits 1 on bad arguments or a bind error.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '4010' },
      host: { type: 'string', default: '127.0.0.1' },
      'ledger-file': { type: 'string' },
      'late-effect-ms': { type: 'string', default: '0' },
      'rates-token': { type: 'string' },
      'catalog-token': { type: 'string' },
      'oauth-client-secret': { type: 'string' },
      'oauth-refresh-token': { type: 'string' },
      'oauth-access-ttl-s': { type: 'string' },
      'oauth-token-delay-ms': { type: 'string' },
      'oauth-reuse-interval-ms': { type: 'string' },
    },
  });
  const partner = await startPartner({
    port: Number(values.port),
    host: values.host,
    ledgerFile: values['ledger-file'],
    lateEffectMs: Number(values['late-effect-ms']),
    ratesToken: values['rates-token'],
    catalogToken: values['catalog-token'],
    oauth: oauthOptions(values),
  });
  process.stdout.write(`demo partner API listening on ${partner.url}\n`);
  const stop = (): void => {
    partner.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`partner: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
