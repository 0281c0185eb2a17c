/**
 * `npm run bench`: throughput and memory of real runs on this machine — a real Temporal dev
 * server, real PostgreSQL, the demo partner API over loopback, one in-process worker. Prints its
 * figures; never fails on them (the machines are shared and noisy).
 *
 *   BENCH_RECORDS=20000 BENCH_CONCURRENT=8 npm run bench
 */
import { performance } from 'node:perf_hooks';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner } from '../partner/server.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createSource, testDeps } from '../test/helpers/deps.ts';
import { startTestServices } from '../test/helpers/services.ts';
import { testClient, testWorker } from '../test/helpers/temporal.ts';

const RECORDS = Number(process.env.BENCH_RECORDS ?? 20_000);
const CONCURRENT = Number(process.env.BENCH_CONCURRENT ?? 8);
const PER_CONCURRENT = Number(process.env.BENCH_CONCURRENT_RECORDS ?? 2_000);
const PAGE_SIZE = 200;
const AB_RECORDS = Number(process.env.BENCH_AB_RECORDS ?? 5_000);
const AB_REPEATS = 3;

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

const say = (line: string) => console.log(`[bench] ${line}`);

function memorySampler() {
  let rss = 0;
  let heap = 0;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    rss = Math.max(rss, m.rss);
    heap = Math.max(heap, m.heapUsed);
  }, 100);
  return {
    stop: () => {
      clearInterval(timer);
      return { rssMiB: Math.round(rss / 2 ** 20), heapMiB: Math.round(heap / 2 ** 20) };
    },
  };
}

const services = await startTestServices(say);
Object.assign(process.env, services.env);
const db = await useTestDatabase();
const partner = await startPartner({
  port: 0,
  recordCount: (sourceId) =>
    sourceId === 'bench-big' ? RECORDS : sourceId === 'bench-ab' ? AB_RECORDS : PER_CONCURRENT,
});
const client = await testClient();
const worker = await testWorker(testDeps(db.prisma));
const ctx = { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue };
const results: Record<string, unknown>[] = [];

try {
  await createSource(db.prisma, 'bench-big', partner.url, { pageSize: PAGE_SIZE });
  await createSource(db.prisma, 'bench-ab', partner.url, { pageSize: PAGE_SIZE });
  await createSource(db.prisma, 'bench-ab-http', partner.url, {
    pageSize: PAGE_SIZE,
    jobType: 'http',
    config: DECLARATIVE_TWIN,
  });
  for (let i = 0; i < CONCURRENT; i++)
    await createSource(db.prisma, `bench-c${i}`, partner.url, { pageSize: PAGE_SIZE });

  await worker.run(async () => {
    // Warm-up: bundles workflow code, opens pools, so the figures measure steady work.
    await createSource(db.prisma, 'bench-warm', partner.url, { pageSize: PAGE_SIZE });
    await (
      await startFetch(ctx, { sourceId: 'bench-warm', date: '2026-01-01', requestedBy: 'test' })
    ).handle.result();

    say(`one run of ${RECORDS} records (${Math.ceil(RECORDS / PAGE_SIZE)} pages of ${PAGE_SIZE})…`);
    let mem = memorySampler();
    let t0 = performance.now();
    const big = await (
      await startFetch(ctx, { sourceId: 'bench-big', date: '2026-01-02', requestedBy: 'test' })
    ).handle.result();
    let seconds = (performance.now() - t0) / 1000;
    results.push({
      scenario: 'one large run',
      records: big.status === 'succeeded' ? big.records : 0,
      seconds: +seconds.toFixed(2),
      recordsPerSecond: Math.round(RECORDS / seconds),
      pagesPerSecond: +(RECORDS / PAGE_SIZE / seconds).toFixed(1),
      ...mem.stop(),
    });

    say(`${CONCURRENT} concurrent runs of ${PER_CONCURRENT} records…`);
    mem = memorySampler();
    t0 = performance.now();
    const handles = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, i) =>
        startFetch(ctx, { sourceId: `bench-c${i}`, date: '2026-01-03', requestedBy: 'test' }),
      ),
    );
    await Promise.all(handles.map((h) => h.handle.result()));
    seconds = (performance.now() - t0) / 1000;
    const total = CONCURRENT * PER_CONCURRENT;
    results.push({
      scenario: `${CONCURRENT} concurrent runs`,
      records: total,
      seconds: +seconds.toFixed(2),
      recordsPerSecond: Math.round(total / seconds),
      pagesPerSecond: +(total / PAGE_SIZE / seconds).toFixed(1),
      ...mem.stop(),
    });

    say(`declarative vs code job: ${AB_REPEATS} interleaved pairs of one run of ${AB_RECORDS} records…`);
    const rate = { code: [] as number[], http: [] as number[] };
    for (let i = 0; i < AB_REPEATS; i++) {
      // Alternating which goes first, so a warming or cooling machine favours neither.
      const order = i % 2 === 0 ? (['code', 'http'] as const) : (['http', 'code'] as const);
      for (const kind of order) {
        const sourceId = kind === 'code' ? 'bench-ab' : 'bench-ab-http';
        const date = `2026-02-${String(i + 1).padStart(2, '0')}`;
        const t = performance.now();
        const r = await (await startFetch(ctx, { sourceId, date, requestedBy: 'test' })).handle.result();
        if (r.status !== 'succeeded' || r.records !== AB_RECORDS)
          throw new Error(`${sourceId} run: ${JSON.stringify(r)}`);
        rate[kind].push(AB_RECORDS / ((performance.now() - t) / 1000));
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    results.push({
      scenario: 'declarative (http job) vs code job',
      records: AB_RECORDS * AB_REPEATS * 2,
      codeRecordsPerSecond: Math.round(median(rate.code)),
      httpRecordsPerSecond: Math.round(median(rate.http)),
      ratio: +(median(rate.http) / median(rate.code)).toFixed(2),
    });

    say('repeating the large run (joins, must write nothing)…');
    const before = await db.prisma.outboxEvent.count();
    t0 = performance.now();
    await (
      await startFetch(ctx, { sourceId: 'bench-big', date: '2026-01-02', requestedBy: 'test' })
    ).handle.result();
    results.push({
      scenario: 'repeat of a finished key',
      records: 0,
      seconds: +((performance.now() - t0) / 1000).toFixed(3),
      newOutboxEvents: (await db.prisma.outboxEvent.count()) - before,
    });
  });

  const stored = await db.prisma.fetchedRecord.count();
  console.table(results);
  say(
    `rows stored: ${stored} (expected ${RECORDS + CONCURRENT * PER_CONCURRENT + 2 * AB_REPEATS * AB_RECORDS + (await partnerWarmCount())})`,
  );
  console.log(
    JSON.stringify({ bench: 'fetch', cpus: (await import('node:os')).availableParallelism(), results }),
  );
} finally {
  await client.connection.close();
  await partner.close();
  await db.drop();
  await services.stop();
}

async function partnerWarmCount(): Promise<number> {
  return db.prisma.fetchedRecord.count({ where: { sourceId: 'bench-warm' } });
}
