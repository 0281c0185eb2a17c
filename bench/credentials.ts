/**
 * `npm run bench` (part): what an OAuth2 source's access token costs a partner call while the
 * token is valid (docs/credentials.md) — from the process's memory (the provider's cache), and
 * from the credential's row (a new provider: one read of the row and the token unsealed, as a
 * worker's first call after a start, or another worker's first call after a refresh), next to the
 * floor of any statement (`SELECT 1` through the same Prisma client). Sequential, in alternating
 * blocks (A B B A …) so that a machine getting busier favours neither. The token endpoint is
 * called once, before measuring: a refresh is the partner's time, not ours.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createTokenProvider } from '../activities/credentials/token-provider.ts';
import { setCredential } from '../db/credentials/credentials.ts';
import { startPartner } from '../partner/server.ts';
import { parseMasterKey, sealValue } from '../runtime/credential-cipher.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { type BenchOptions, type BenchSection, percentile, round } from './report.ts';
import { standalone } from './standalone.ts';

const CREDENTIAL = 'bench-crm';
const CLIENT = { id: 'bench-client', secret: 'bench-client-secret' };

type Kind = 'cache' | 'row' | 'floor';

const stats = (xs: number[]) => ({
  p50: round(percentile(xs, 50), 4),
  p95: round(percentile(xs, 95), 4),
  p99: round(percentile(xs, 99), 4),
  samples: xs.length,
});

export async function benchCredentials(opts: BenchOptions): Promise<BenchSection> {
  const perBlock = opts.quick ? 200 : 1_000;
  const blocks = 4;
  const key = parseMasterKey(randomBytes(32).toString('base64'));
  const db = await useTestDatabase();
  const partner = await startPartner({
    port: 0,
    oauth: { accessTokenTtlSeconds: 3_600, clients: [{ ...CLIENT, rotation: true }] },
  });
  const samples: Record<Kind, number[]> = { cache: [], row: [], floor: [] };
  let tokenCalls: number;
  try {
    const grant = partner.oauth.authority.grant(CLIENT.id);
    await setCredential(
      db.prisma,
      {
        id: CREDENTIAL,
        grantType: 'refresh_token',
        tokenUrl: `${partner.url}/oauth/token`,
        clientId: CLIENT.id,
        clientSecretRef: 'DF_SECRET_BENCH_CLIENT',
        clientAuth: 'basic',
        scope: null,
        audience: null,
        extraParams: {},
      },
      sealValue(key, CREDENTIAL, 'refresh_token', grant.refreshToken),
    );
    const provider = () => createTokenProvider({ prisma: db.prisma, key, secret: () => CLIENT.secret });
    const warm = provider();
    // The one refresh: the row then holds a token valid for an hour.
    await warm.accessToken(CREDENTIAL);
    const ops: Record<Kind, () => Promise<unknown>> = {
      cache: () => warm.accessToken(CREDENTIAL),
      row: () => provider().accessToken(CREDENTIAL),
      floor: () => db.prisma.$queryRaw`SELECT 1`,
    };
    for (const op of Object.values(ops)) for (let i = 0; i < 50; i++) await op();
    opts.say(`credentials: ${blocks} blocks of ${perBlock} lookups of each kind…`);
    for (let b = 0; b < blocks; b++) {
      const order: Kind[] = b % 2 === 0 ? ['cache', 'row', 'floor'] : ['floor', 'row', 'cache'];
      for (const kind of order) {
        for (let i = 0; i < perBlock; i++) {
          const t0 = performance.now();
          await ops[kind]();
          samples[kind].push(performance.now() - t0);
        }
      }
    }
    tokenCalls = partner.oauth.requests.count({ endpoint: 'token', family: grant.family });
  } finally {
    await partner.close();
    await db.drop();
  }
  const cache = stats(samples.cache);
  const row = stats(samples.row);
  const floor = stats(samples.floor);
  return {
    name: 'credentials',
    rows: [
      {
        scenario: 'OAuth2 access token, in-process cache hit, p50 (baseline: read from the row)',
        ours: cache.p50,
        baseline: row.p50,
        unit: 'ms',
        ratio: round(row.p50 / cache.p50),
      },
      {
        scenario: 'OAuth2 access token, read from the row (new provider), p50 (baseline: SELECT 1)',
        ours: row.p50,
        baseline: floor.p50,
        unit: 'ms',
        ratio: round(floor.p50 / row.p50),
      },
      {
        scenario: 'OAuth2 access token, read from the row (new provider), p95 (baseline: SELECT 1)',
        ours: row.p95,
        baseline: floor.p95,
        unit: 'ms',
        ratio: round(floor.p95 / row.p95),
      },
    ],
    details: { perBlock, blocks, cacheHit: cache, rowRead: row, selectOne: floor, tokenCalls },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchCredentials);
