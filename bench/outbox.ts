/**
 * `npm run bench` (outbox section): the relay against a plain INSERT loop on the same PostgreSQL
 * (targets: relay throughput ≥ a single-client INSERT…COMMIT loop; relay lag p99 under 1 s at half
 * the relay's peak rate). Real PostgreSQL, the demo partner's webhook over loopback (the partner in
 * a child process, as a real consumer) and, when it is reachable, NATS JetStream at 127.0.0.1:4222.
 * The three throughput runs alternate (INSERT loop, relay → webhook, relay → NATS) for each
 * repetition; the rows give medians. Never fails on a figure.
 *
 *   npx tsx bench/outbox.ts [--quick]
 *   (BENCH_OUTBOX_EVENTS, BENCH_LAG_SECONDS, BENCH_OUTBOX_REPS override the load)
 */
import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { pino } from 'pino';
import { createHttpClient } from '../activities/http.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { spawnTs } from '../test/helpers/process.ts';
import { createPrisma, type PrismaClient } from '../db/client.ts';
import { publisherPool } from '../worker/pool-size.ts';
import { createNatsSink } from '../worker/outbox/nats-sink.ts';
import { Publisher, type PublisherOptions } from '../worker/outbox/publisher.ts';
import type { Sink } from '../worker/outbox/sinks.ts';
import { createWebhookSink } from '../worker/outbox/webhook-sink.ts';
import type { BenchOptions, BenchRow, BenchSection } from './report.ts';
import { standalone } from './standalone.ts';
import { engineConnection } from '../db/pool-config.ts';

const AGGREGATES = 500;
const NATS_URL = process.env.DURABLE_FETCH_NATS_URL ?? 'nats://127.0.0.1:4222';

/** The production defaults (runtime/config.ts), except a short idle poll. */
const OPTIONS: PublisherOptions = {
  batchSize: 200,
  concurrency: 32,
  loops: 2,
  leaseMs: 30_000,
  pollMs: 20,
  maxAttempts: 12,
  backoff: { initialMs: 1_000, coefficient: 2, maximumMs: 60_000 },
  routes: [{ pattern: '*', sink: 'webhook' }],
};

const INSERT_SQL =
  'INSERT INTO outbox_event (id, topic, aggregate_type, aggregate_id, payload, status) VALUES ($1, $2, $3, $4, $5, $6)';
const row = (i: number, topic: string, status: string) => [
  randomUUID(),
  topic,
  'bench',
  `agg-${i % AGGREGATES}`,
  JSON.stringify({ i }),
  status,
];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The reference: one client, one INSERT per transaction (autocommit), as fast as it goes. */
async function insertLoop(pool: pg.Pool, n: number): Promise<number> {
  const client = await pool.connect();
  try {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await client.query(INSERT_SQL, row(i, 'bench.insert', 'published'));
    return n / ((performance.now() - t0) / 1000);
  } finally {
    client.release();
  }
}

async function bulkInsert(pool: pg.Pool, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    const k = Math.min(1000, n - i);
    await pool.query(
      `INSERT INTO outbox_event (id, topic, aggregate_type, aggregate_id, payload)
       SELECT gen_random_uuid(), 'bench.event', 'bench', 'agg-' || (g % ${AGGREGATES}), jsonb_build_object('i', g)
         FROM generate_series($1::int, $2::int) g ORDER BY g`,
      [i, i + k - 1],
    );
  }
}

async function untilDrained(pool: pg.Pool): Promise<void> {
  const pending = async () =>
    (await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox_event WHERE status = 'pending'"))
      .rows[0]!.n;
  while ((await pending()) > 0) await sleep(10);
}

function publisherOn(prisma: PrismaClient, sink: Sink): Publisher {
  const options = { ...OPTIONS, routes: [{ pattern: '*', sink: sink.name }] };
  return new Publisher(prisma, new Map([[sink.name, sink]]), options, pino({ level: 'silent' }));
}

/** Relay throughput: `n` events waiting, one publisher, time until none is pending. */
async function relayRate(pool: pg.Pool, prisma: PrismaClient, sink: Sink, n: number): Promise<number> {
  await bulkInsert(pool, n);
  const publisher = publisherOn(prisma, sink);
  const t0 = performance.now();
  publisher.start();
  await untilDrained(pool);
  const seconds = (performance.now() - t0) / 1000;
  await publisher.stop(5_000);
  return n / seconds;
}

/** Lag percentiles (created → published, database clock) while producing `rate` events/s. */
async function lagAt(pool: pg.Pool, prisma: PrismaClient, sink: Sink, rate: number, seconds: number) {
  const publisher = publisherOn(prisma, sink);
  publisher.start();
  const topic = `bench.lag.${randomUUID()}`;
  const t0 = performance.now();
  let sent = 0;
  const inFlight = new Set<Promise<unknown>>();
  while (performance.now() - t0 < seconds * 1000) {
    const due = Math.floor(((performance.now() - t0) / 1000) * rate);
    for (; sent < due; sent++) {
      const p = pool.query(INSERT_SQL, row(sent, topic, 'pending')).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await sleep(5);
  }
  await Promise.all(inFlight);
  await untilDrained(pool);
  await publisher.stop(5_000);
  const { rows } = await pool.query<Record<'p50' | 'p95' | 'p99' | 'max', number>>(
    `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY lag) AS p50,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY lag) AS p95,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY lag) AS p99, max(lag) AS max
       FROM (SELECT extract(epoch FROM published_at - created_at) * 1000 AS lag
               FROM outbox_event WHERE topic = $1) l`,
    [topic],
  );
  const r = rows[0]!;
  const ms = (x: number) => Math.round(Number(x));
  return { rate, events: sent, p50Ms: ms(r.p50), p95Ms: ms(r.p95), p99Ms: ms(r.p99), maxMs: ms(r.max) };
}

async function natsReachable(): Promise<boolean> {
  try {
    await (await connect({ servers: NATS_URL, timeout: 1_000 })).close();
    return true;
  } catch {
    return false;
  }
}

export async function benchOutbox(opts: BenchOptions): Promise<BenchSection> {
  const { quick, say } = opts;
  const events = Number(process.env.BENCH_OUTBOX_EVENTS ?? (quick ? 2_000 : 5_000));
  const reps = Number(process.env.BENCH_OUTBOX_REPS ?? (quick ? 1 : 3));
  const lagSeconds = Number(process.env.BENCH_LAG_SECONDS ?? (quick ? 3 : 10));
  const db = await useTestDatabase();
  await db.prisma.$disconnect();
  const pool = new pg.Pool({ ...engineConnection(db.url), max: 4 });
  // pg-pool's end() resolves before its idle clients' sockets have closed, so the database's drop
  // at teardown can terminate one of them after it (57P01): that must not crash the bench, whose
  // queries report their own failures.
  pool.on('error', () => undefined);
  // The publisher's client as `durable-fetch publisher` opens it: its own pool, sized the same way.
  const prisma = createPrisma(db.url, publisherPool(OPTIONS.loops));
  const partner = spawnTs(['partner/main.ts', '--port', '0'], {});
  const stream = `BENCH_${randomUUID().slice(0, 8)}`;
  const sinks: Sink[] = [];
  try {
    const [, partnerUrl] = await partner.waitFor(/listening on (http:\S+)/, 30_000);
    const http = createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 10_000 });
    sinks.push(createWebhookSink(http, new URL(`${partnerUrl}/events`)));
    if (await natsReachable()) {
      const nats = { servers: NATS_URL, stream, subjectPrefix: `bench-${stream}` };
      sinks.push(createNatsSink({ ...nats, duplicateWindowMs: 120_000, timeoutMs: 10_000 }));
    } else say(`NATS not reachable at ${NATS_URL}: measuring the webhook sink only`);

    // Warm-up: connections, JIT, stream creation.
    await insertLoop(pool, 500);
    for (const sink of sinks) await relayRate(pool, prisma, sink, 500);
    const insert: number[] = [];
    const relay = new Map<string, number[]>(sinks.map((s) => [s.name, []]));
    for (let rep = 1; rep <= reps; rep++) {
      await pool.query('TRUNCATE outbox_event');
      insert.push(await insertLoop(pool, events));
      for (const sink of sinks) {
        await pool.query('TRUNCATE outbox_event');
        relay.get(sink.name)!.push(await relayRate(pool, prisma, sink, events));
      }
      const line = sinks.map((s) => `${s.name} ${Math.round(relay.get(s.name)!.at(-1)!)}/s`).join(', ');
      say(`outbox rep ${rep}/${reps}: INSERT loop ${Math.round(insert.at(-1)!)}/s, relay ${line}`);
    }
    const insertMedian = median(insert);
    const rows: BenchRow[] = [];
    const lag: Record<string, unknown> = {};
    for (const sink of sinks) {
      const rates = relay.get(sink.name)!;
      const ratios = rates.map((r, i) => r / insert[i]!);
      rows.push({
        scenario: `relay → ${sink.name} events/s vs INSERT…COMMIT loop, 1 client (${events} events)`,
        ours: Math.round(median(rates)),
        baseline: Math.round(insertMedian),
        unit: 'events/s',
        ratio: +median(ratios).toFixed(2),
        goal: '≥ 1.0',
      });
      await pool.query('TRUNCATE outbox_event');
      const rate = Math.round(median(rates) / 2);
      say(`outbox lag → ${sink.name} while producing ${rate} events/s for ${lagSeconds} s…`);
      lag[sink.name] = await lagAt(pool, prisma, sink, rate, lagSeconds);
    }
    return {
      name: 'outbox',
      rows,
      details: {
        cpus: availableParallelism(),
        events,
        aggregates: AGGREGATES,
        repetitions: reps,
        publisher: { ...OPTIONS, routes: undefined, poolSize: publisherPool(OPTIONS.loops).max },
        insertLoopPerRep: insert.map(Math.round),
        relayPerRep: Object.fromEntries([...relay].map(([k, v]) => [k, v.map(Math.round)])),
        lagAtHalfPeak: { goal: 'p99 < 1000 ms', lagSeconds, ...lag },
      },
    };
  } finally {
    for (const sink of sinks) await sink.close();
    if (sinks.some((s) => s.name === 'nats')) {
      const nc = await connect({ servers: NATS_URL });
      await (await jetstreamManager(nc)).streams.delete(stream).catch(() => false);
      await nc.close();
    }
    await partner.stop('SIGTERM', 10_000);
    await prisma.$disconnect();
    await pool.end();
    await db.drop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchOutbox);
