import { parseArgs } from 'node:util';
import { startPartner } from './server.ts';

/**
 * Standalone demo partner:
 * `tsx partner/main.ts [--port 4010] [--host 127.0.0.1] [--ledger-file path] [--late-effect-ms n]
 * [--rates-token t] [--catalog-token t]` (see `PartnerOptions.lateEffectMs`, `.ratesToken` and
 * `.catalogToken`).
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
    },
  });
  const partner = await startPartner({
    port: Number(values.port),
    host: values.host,
    ledgerFile: values['ledger-file'],
    lateEffectMs: Number(values['late-effect-ms']),
    ratesToken: values['rates-token'],
    catalogToken: values['catalog-token'],
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
