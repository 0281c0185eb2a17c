/**
 * `npm run bench`, capacity (R12d "concurrency, disk/memory capacity"): 2,000 one-page runs
 * (100 records each) queued at once on one `durable-fetch worker` process with its defaults —
 * time to drain, the worker's peak RSS, and the database's growth per 1,000 runs, rows and bytes
 * per table; then 50,000 pending outbox events drained by one `durable-fetch publisher` process
 * to the demo partner's webhook (in its own process) — time, rate, the publisher's peak RSS and
 * the `outbox_event` table's size. No baseline: the rows compare each figure with what bounds it
 * (the backlog's first 200 runs for memory and throughput).
 * `--quick`: 300 runs and 5,000 events.
 *
 *   npx tsx bench/capacity.ts [--quick]
 *   (BENCH_CAPACITY_RUNS, BENCH_CAPACITY_EVENTS override the load)
 */
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { startPartner } from '../partner/server.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createSource } from '../test/helpers/deps.ts';
import { spawnTs } from '../test/helpers/process.ts';
import { testClient } from '../test/helpers/temporal.ts';
import { loadConfig } from '../runtime/config.ts';
import { measurePhase, type PhaseResult, startRun } from './phases.ts';
import { peakRss } from './proc-stats.ts';
import { type BenchOptions, type BenchRow, type BenchSection, round } from './report.ts';
import { startBenchPublisher, startBenchWorker } from './service-processes.ts';
import { standalone } from './standalone.ts';
import { growth, mib, nonZero, tableSizes, totalBytes } from './table-sizes.ts';
import { engineConnection } from '../db/pool-config.ts';

const RECORDS = 100;
const SOURCE = 'capacity';
/** The first backlog, whose worker RSS the big one is compared with. */
const SMALL_BACKLOG = 200;

/** The backlog: `runs` runs queued at once on a fresh worker, after a small one on the same worker. */
async function backlog(opts: BenchOptions, runs: number) {
  const db = await useTestDatabase();
  const partner = await startPartner({ port: 0, recordCount: () => RECORDS, maxPageSize: RECORDS });
  const client = await testClient();
  const worker = await startBenchWorker(db.url);
  try {
    await createSource(db.prisma, SOURCE, partner.url, { pageSize: RECORDS });
    const ctx = { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue };
    const run = () => startRun(ctx, SOURCE, RECORDS);
    opts.say('capacity: warming up (20 runs)…');
    await measurePhase(worker.process, worker.serverPid, 20, run);
    const small = Math.min(SMALL_BACKLOG, runs);
    opts.say(`capacity: ${small} runs queued at once…`);
    const first = await measurePhase(worker.process, worker.serverPid, small, run);
    const before = await tableSizes(db.url);
    opts.say(`capacity: ${runs} runs queued at once…`);
    const big = await measurePhase(worker.process, worker.serverPid, runs, run);
    const after = await tableSizes(db.url);
    const perThousand = nonZero(growth(before, after, runs, 1_000));
    return { first, big, before: nonZero(before), after: nonZero(after), perThousand };
  } finally {
    await worker.stop();
    await client.connection.close();
    await partner.close();
    await db.drop();
  }
}

/** `n` pending events over 500 aggregates, inserted in statements of 5,000; how long it took. */
async function insertEvents(pool: pg.Pool, n: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i += 5_000) {
    await pool.query(
      `INSERT INTO outbox_event (id, topic, aggregate_type, aggregate_id, payload)
       SELECT gen_random_uuid(), 'bench.capacity', 'bench', 'agg-' || (g % 500),
              jsonb_build_object('i', g, 'externalIds', jsonb_build_array('r1', 'r2', 'r3'))
         FROM generate_series($1::int, $2::int) g ORDER BY g`,
      [i, Math.min(n, i + 5_000) - 1],
    );
  }
  return (performance.now() - t0) / 1000;
}

const countWhere = async (pool: pg.Pool, status: string) =>
  Number(
    (
      await pool.query<{ n: string }>('SELECT count(*)::text AS n FROM outbox_event WHERE status = $1', [
        status,
      ])
    ).rows[0]?.n ?? 0,
  );

/** `n` pending events drained by a real publisher process to the partner's webhook. */
async function outboxDrain(opts: BenchOptions, n: number) {
  const db = await useTestDatabase();
  await db.prisma.$disconnect();
  const pool = new pg.Pool({ ...engineConnection(db.url), max: 2 });
  pool.on('error', () => undefined);
  const partner = spawnTs(['partner/main.ts', '--port', '0'], {});
  try {
    const [, partnerUrl] = await partner.waitFor(/listening on (http:\S+)/, 30_000);
    const empty = await tableSizes(db.url);
    opts.say(`capacity: inserting ${n} pending outbox events…`);
    const insertSeconds = await insertEvents(pool, n);
    const filled = await tableSizes(db.url);
    opts.say(`capacity: one publisher process drains them…`);
    const t0 = performance.now();
    const publisher = await startBenchPublisher(db.url, `${partnerUrl}/events`);
    // From here it claims: its start (loading the code, connecting) is reported apart.
    const tReady = performance.now();
    const memory = peakRss([publisher.pid]);
    let pending = n;
    try {
      const deadline = Date.now() + 20 * 60_000;
      while ((pending = await countWhere(pool, 'pending')) > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await publisher.stop();
    }
    const seconds = (performance.now() - tReady) / 1000;
    const startSeconds = (tReady - t0) / 1000;
    const [publisherPeakRssMiB = 0] = memory.stop();
    if (pending > 0) throw new Error(`${pending} of ${n} events still pending after 20 minutes`);
    const published = await countWhere(pool, 'published');
    const drained = await tableSizes(db.url);
    return {
      events: n,
      published,
      insertSeconds: round(insertSeconds),
      insertRate: Math.round(n / insertSeconds),
      publisherStartSeconds: round(startSeconds),
      seconds: round(seconds),
      eventsPerSecond: Math.round(n / seconds),
      publisherPeakRssMiB,
      outboxTable: {
        empty: empty.outbox_event,
        pending: filled.outbox_event,
        published: drained.outbox_event,
      },
      publisherSettings: (({ batchSize, concurrency, pollMs, leaseMs }) => ({
        batchSize,
        concurrency,
        pollMs,
        leaseMs,
      }))(loadConfig({}).outbox),
    };
  } finally {
    await partner.stop('SIGTERM', 10_000);
    await pool.end();
    await db.drop();
  }
}

function rowsOf(
  b: Awaited<ReturnType<typeof backlog>>,
  o: Awaited<ReturnType<typeof outboxDrain>>,
  runs: number,
): BenchRow[] {
  const perRun = (p: PhaseResult) => p.runsPerSecond;
  const grown = totalBytes(b.perThousand);
  return [
    {
      scenario: `worker peak RSS, ${runs} runs queued at once vs ${b.first.runs}`,
      ours: b.big.workerPeakRssMiB,
      baseline: b.first.workerPeakRssMiB,
      unit: 'MiB',
      ratio: round(b.first.workerPeakRssMiB / b.big.workerPeakRssMiB),
      goal: '≥ 0.83 (within 20 %)',
    },
    {
      scenario: `time to drain ${runs} runs queued at once (runs/s vs ${b.first.runs} runs)`,
      ours: b.big.seconds,
      baseline: round(b.big.runs / perRun(b.first)),
      unit: 's',
      ratio: round(b.big.runs / perRun(b.first) / b.big.seconds),
      goal: '≥ 0.9',
    },
    {
      scenario: `database growth per 1,000 runs of ${RECORDS} records, all tables (fetched_record: ${mib(b.perThousand.fetched_record?.bytes ?? 0)} MiB)`,
      ours: mib(grown),
      baseline: null,
      unit: 'MiB',
      ratio: null,
    },
    {
      scenario: `publisher process drains ${o.events} pending outbox events to the webhook (${o.seconds} s after its start)`,
      ours: o.eventsPerSecond,
      baseline: null,
      unit: 'events/s',
      ratio: null,
    },
    {
      scenario: `publisher peak RSS draining ${o.events} events`,
      ours: o.publisherPeakRssMiB,
      baseline: null,
      unit: 'MiB',
      ratio: null,
    },
  ];
}

export async function benchCapacity(opts: BenchOptions): Promise<BenchSection> {
  const runs = Number(process.env.BENCH_CAPACITY_RUNS ?? (opts.quick ? 300 : 2_000));
  const events = Number(process.env.BENCH_CAPACITY_EVENTS ?? (opts.quick ? 5_000 : 50_000));
  const b = await backlog(opts, runs);
  opts.say(
    `capacity: ${runs} runs in ${b.big.seconds} s, worker peak RSS ${b.big.workerPeakRssMiB} MiB ` +
      `(${b.first.workerPeakRssMiB} MiB for ${b.first.runs}); per 1,000 runs: ` +
      Object.entries(b.perThousand)
        .map(([t, s]) => `${t} +${s.rows} rows +${mib(s.bytes)} MiB`)
        .join(', '),
  );
  const o = await outboxDrain(opts, events);
  opts.say(
    `capacity: ${events} outbox events drained in ${o.seconds} s (${o.eventsPerSecond}/s), publisher peak RSS ${o.publisherPeakRssMiB} MiB`,
  );
  return {
    name: 'capacity',
    rows: rowsOf(b, o, runs),
    details: {
      recordsPerRun: RECORDS,
      backlog: {
        runs,
        firstBacklog: b.first,
        phase: b.big,
        tablesBefore: b.before,
        tablesAfter: b.after,
        growthPer1000Runs: b.perThousand,
        workerSettings: (({ activitySlots, cachedWorkflows }) => ({ activitySlots, cachedWorkflows }))(
          loadConfig({}).worker,
        ),
      },
      outbox: o,
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchCapacity);
