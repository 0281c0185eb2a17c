/**
 * `npm run bench`, fetch: records per second of real runs — one large run against the plain
 * script a user would write instead (bench/plain-pull.ts, interleaved pairs), several at once, the
 * declarative (`http`) job against the code job on the same partner API (interleaved pairs), and
 * a repeat of a finished key, which must write nothing. One in-process worker, a real dev server,
 * real PostgreSQL, the demo partner over loopback.
 */
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { SOURCE_DEFAULTS } from '../client/sources/file-schema.ts';
import { startFetch } from '../client/start-fetch.ts';
import { poolConfig } from '../db/client.ts';
import { loadConfig } from '../runtime/config.ts';
import { startPartner } from '../partner/server.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createSource, testDeps } from '../test/helpers/deps.ts';
import { testClient, testWorker } from '../test/helpers/temporal.ts';
import { nextDate } from './phases.ts';
import { type BenchOptions, type BenchSection, median, round } from './report.ts';
import { plainPull } from './plain-pull.ts';
import { standalone } from './standalone.ts';

/** A new source's page size: the bench measures the defaults. */
const PAGE_SIZE = SOURCE_DEFAULTS.pageSize;

/**
 * The declarative (`http` job) twin of the demo job: the same records API, page size and partner
 * page limit, described by configuration only.
 */
const DECLARATIVE_TWIN = {
  request: { path: '/sources/bench-ab/records', query: { date: '{date}' } },
  auth: { type: 'none' },
  records: { path: 'records' },
  pagination: { type: 'cursor', path: 'nextCursor', param: 'cursor', limitParam: 'limit' },
};

export async function benchFetch(opts: BenchOptions): Promise<BenchSection> {
  const big = opts.quick ? 4_000 : 20_000;
  const huge = opts.quick ? 20_000 : 200_000;
  const bigPairs = opts.quick ? 1 : 3;
  const concurrent = 8;
  const perConcurrent = opts.quick ? 400 : 2_000;
  const ab = opts.quick ? 1_000 : 5_000;
  const repeats = opts.quick ? 1 : 3;
  const db = await useTestDatabase();
  const counts: Record<string, number> = {
    'bench-big': big,
    'bench-plain': big,
    'bench-huge': huge,
    'bench-plain-huge': huge,
    'bench-ab': ab,
    'bench-warm': 400,
  };
  const partner = await startPartner({ port: 0, recordCount: (id) => counts[id] ?? perConcurrent });
  const client = await testClient();
  const worker = await testWorker(testDeps(db.prisma));
  const ctx = { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue };
  const run = async (sourceId: string, date = nextDate()) => {
    const started = await startFetch(ctx, { sourceId, date, requestedBy: 'test' });
    const r = await started.handle.result();
    if (r.status !== 'succeeded') throw new Error(`${sourceId}: ${JSON.stringify(r)}`);
    return r.records;
  };
  const timed = async (fn: () => Promise<unknown>) => {
    const t0 = performance.now();
    await fn();
    return (performance.now() - t0) / 1000;
  };
  // The plain script's pool: sized as the worker's, no session bounds (a script sets none).
  const plainPool = new pg.Pool(poolConfig(db.url));
  plainPool.on('error', () => undefined);
  const limit = loadConfig().partner.pageLimit;
  const plain = async (sourceId: string, date: string) => {
    const fetchRun = await db.prisma.fetchRun.create({
      data: {
        jobType: 'plain-script',
        sourceId,
        businessDate: new Date(`${date}T00:00:00Z`),
        payload: {},
        idempotencyKey: `plain:${sourceId}:${date}`,
        scheduledAt: new Date(),
        correlationId: 'bench',
        workflowId: 'none',
      },
    });
    const n = await plainPull({
      pool: plainPool,
      partnerUrl: partner.url,
      sourceId,
      date,
      limit,
      fetchRunId: fetchRun.id,
    });
    if (n !== counts[sourceId]) throw new Error(`${sourceId}: the plain script stored ${n} records`);
  };
  try {
    for (const id of ['bench-big', 'bench-huge', 'bench-plain', 'bench-plain-huge', 'bench-ab', 'bench-warm'])
      await createSource(db.prisma, id, partner.url, { pageSize: PAGE_SIZE });
    await createSource(db.prisma, 'bench-ab-http', partner.url, {
      pageSize: PAGE_SIZE,
      jobType: 'http',
      config: DECLARATIVE_TWIN,
    });
    for (let i = 0; i < concurrent; i++)
      await createSource(db.prisma, `bench-c${i}`, partner.url, { pageSize: PAGE_SIZE });
    return await worker.run(async () => {
      await run('bench-warm'); // bundles workflow code, opens pools
      opts.say(`fetch: one run of ${big} records against the plain script, ${bigPairs} interleaved pairs…`);
      const bulk = { ours: [] as number[], plain: [] as number[] };
      let bigDate = '';
      for (let i = 0; i < bigPairs; i++) {
        // Alternating which goes first, so a warming or cooling machine favours neither.
        const order = i % 2 === 0 ? (['ours', 'plain'] as const) : (['plain', 'ours'] as const);
        for (const kind of order) {
          const date = nextDate();
          if (kind === 'ours') bigDate = date;
          const seconds = await timed(() =>
            kind === 'ours' ? run('bench-big', date) : plain('bench-plain', date),
          );
          bulk[kind].push(big / seconds);
        }
      }
      opts.say(`fetch: one run of ${huge} records against the plain script…`);
      const hugeRate = {
        ours: huge / (await timed(() => run('bench-huge'))),
        plain: huge / (await timed(() => plain('bench-plain-huge', nextDate()))),
      };
      opts.say(`fetch: ${concurrent} runs of ${perConcurrent} records at once…`);
      const manySeconds = await timed(() =>
        Promise.all(Array.from({ length: concurrent }, (_, i) => run(`bench-c${i}`))),
      );
      opts.say(`fetch: declarative vs code job, ${repeats} interleaved pairs of ${ab} records…`);
      const rate = { code: [] as number[], http: [] as number[] };
      for (let i = 0; i < repeats; i++) {
        // Alternating which goes first, so a warming or cooling machine favours neither.
        const order = i % 2 === 0 ? (['code', 'http'] as const) : (['http', 'code'] as const);
        for (const kind of order) {
          const seconds = await timed(() => run(kind === 'code' ? 'bench-ab' : 'bench-ab-http'));
          rate[kind].push(ab / seconds);
        }
      }
      const before = await db.prisma.outboxEvent.count();
      const repeatSeconds = await timed(() => run('bench-big', bigDate));
      const newEvents = (await db.prisma.outboxEvent.count()) - before;
      const code = median(rate.code);
      const http = median(rate.http);
      return {
        name: 'fetch',
        rows: [
          {
            scenario: `one run of ${big} records (baseline: the plain fetch + upsert + outbox script)`,
            ours: Math.round(median(bulk.ours)),
            baseline: Math.round(median(bulk.plain)),
            unit: 'records/s',
            ratio: round(median(bulk.ours) / median(bulk.plain)),
            goal: '≥ 0.7',
          },
          {
            scenario: `one run of ${huge} records (baseline: the same script)`,
            ours: Math.round(hugeRate.ours),
            baseline: Math.round(hugeRate.plain),
            unit: 'records/s',
            ratio: round(hugeRate.ours / hugeRate.plain),
          },
          {
            scenario: `${concurrent} runs of ${perConcurrent} records at once`,
            ours: Math.round((concurrent * perConcurrent) / manySeconds),
            baseline: null,
            unit: 'records/s',
            ratio: null,
          },
          {
            scenario: 'declarative http job (baseline: the code job)',
            ours: Math.round(http),
            baseline: Math.round(code),
            unit: 'records/s',
            ratio: round(http / code),
          },
          {
            scenario: 'repeat of a finished key (joins, writes nothing)',
            ours: round(repeatSeconds, 3),
            baseline: null,
            unit: 's',
            ratio: null,
          },
        ],
        details: {
          pageSize: PAGE_SIZE,
          partnerLimit: limit,
          bulk,
          hugeRate,
          manySeconds,
          rate,
          repeatNewOutboxEvents: newEvents,
        },
      } satisfies BenchSection;
    });
  } finally {
    await client.connection.close();
    await plainPool.end();
    await partner.close();
    await db.drop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchFetch);
