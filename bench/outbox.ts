/**
 * `npm run bench` (second part): the outbox relay against a plain INSERT loop on the same
 * PostgreSQL, side by side (issue #4 targets: relay throughput ≥ a single-client INSERT…COMMIT
 * loop; relay lag p99 under 1 s at half the relay's peak rate). Real PostgreSQL, the demo
 * partner's webhook over loopback (the partner in a child process) and, when it is reachable,
 * NATS JetStream at 127.0.0.1:4222.
 * Prints its figures; never fails on them.
 *
 *   BENCH_OUTBOX_EVENTS=5000 BENCH_LAG_SECONDS=10 npm run bench
 *   (BENCH_OUTBOX_BATCH, _CONCURRENCY, _LOOPS: the publisher's settings, default as in production)
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { pino } from 'pino';
import { createHttpClient } from '../activities/http.ts';
import { useTestDatabase, type TestDatabase } from '../test/helpers/database.ts';
import { spawnTs } from '../test/helpers/process.ts';
import { startTestServices } from '../test/helpers/services.ts';
import { createNatsSink } from '../worker/outbox/nats-sink.ts';
import { Publisher, type PublisherOptions } from '../worker/outbox/publisher.ts';
import type { Sink } from '../worker/outbox/sinks.ts';
import { createWebhookSink } from '../worker/outbox/webhook-sink.ts';

const EVENTS = Number(process.env.BENCH_OUTBOX_EVENTS ?? 5_000);
const LAG_SECONDS = Number(process.env.BENCH_LAG_SECONDS ?? 10);
const AGGREGATES = 500;
const NATS_URL = process.env.DURABLE_FETCH_NATS_URL ?? 'nats://127.0.0.1:4222';

const say = (line: string) => console.log(`[bench] ${line}`);

const OPTIONS: PublisherOptions = {
  batchSize: Number(process.env.BENCH_OUTBOX_BATCH ?? 200),
  concurrency: Number(process.env.BENCH_OUTBOX_CONCURRENCY ?? 32),
  loops: Number(process.env.BENCH_OUTBOX_LOOPS ?? 2),
  leaseMs: 30_000,
  pollMs: 20,
  maxAttempts: 12,
  backoff: { initialMs: 1_000, coefficient: 2, maximumMs: 60_000 },
  routes: [{ pattern: '*', sink: 'webhook' }],
};

const event = (i: number) => [
  randomUUID(),
  'bench.event',
  'bench',
  `agg-${i % AGGREGATES}`,
  JSON.stringify({ i }),
];

/** The reference: one client, one INSERT per transaction (autocommit), as fast as it goes. */
async function insertLoop(url: string, n: number): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      await client.query(
        'INSERT INTO outbox_event (id, topic, aggregate_type, aggregate_id, payload, status) VALUES ($1, $2, $3, $4, $5, $6)',
        [...event(i), 'published'],
      );
    }
    return n / ((performance.now() - t0) / 1000);
  } finally {
    await client.end();
  }
}

async function bulkInsert(db: TestDatabase, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    await db.prisma.outboxEvent.createMany({
      data: Array.from({ length: Math.min(1000, n - i) }, (_, k) => {
        const [id, topic, aggregateType, aggregateId] = event(i + k) as [string, string, string, string];
        return { id, topic, aggregateType, aggregateId, payload: { i: i + k } };
      }),
    });
  }
}

async function pending(db: TestDatabase): Promise<number> {
  return db.prisma.outboxEvent.count({ where: { status: 'pending' } });
}

async function untilDrained(db: TestDatabase): Promise<void> {
  while ((await pending(db)) > 0) await new Promise((resolve) => setTimeout(resolve, 20));
}

function publisherOn(db: TestDatabase, sink: Sink): Publisher {
  const sinks = new Map([[sink.name, sink]]);
  return new Publisher(
    db.prisma,
    sinks,
    { ...OPTIONS, routes: [{ pattern: '*', sink: sink.name }] },
    pino({ level: 'silent' }),
  );
}

/** Relay throughput: `n` events waiting, one publisher, time until none is pending. */
async function relayRate(db: TestDatabase, sink: Sink, n: number): Promise<number> {
  await bulkInsert(db, n);
  const publisher = publisherOn(db, sink);
  const t0 = performance.now();
  publisher.start();
  await untilDrained(db);
  const seconds = (performance.now() - t0) / 1000;
  await publisher.stop(5_000);
  return n / seconds;
}

/** Lag percentiles (created → published, database clock) while producing `rate` events/s. */
async function lagAt(db: TestDatabase, sink: Sink, rate: number, seconds: number) {
  const producer = new pg.Pool({ connectionString: db.url, max: 4 });
  const publisher = publisherOn(db, sink);
  publisher.start();
  const runId = randomUUID();
  const t0 = performance.now();
  let sent = 0;
  const inFlight = new Set<Promise<unknown>>();
  while (performance.now() - t0 < seconds * 1000) {
    const due = Math.floor(((performance.now() - t0) / 1000) * rate);
    for (; sent < due; sent++) {
      const [id, , aggregateType, aggregateId, payload] = event(sent);
      const p = producer
        .query(
          'INSERT INTO outbox_event (id, topic, aggregate_type, aggregate_id, payload) VALUES ($1, $2, $3, $4, $5)',
          [id, `bench.lag.${runId}`, aggregateType, aggregateId, payload],
        )
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await Promise.all(inFlight);
  await untilDrained(db);
  await publisher.stop(5_000);
  await producer.end();
  const rows = await db.prisma.$queryRaw<{ p50: number; p95: number; p99: number; max: number; n: number }[]>`
    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY lag) AS p50,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY lag) AS p95,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY lag) AS p99,
           max(lag) AS max, count(*)::int AS n
      FROM (SELECT extract(epoch FROM published_at - created_at) * 1000 AS lag
              FROM outbox_event WHERE topic = ${`bench.lag.${runId}`}) l`;
  const r = rows[0]!;
  return {
    events: r.n,
    achievedRate: Math.round(sent / seconds),
    lagP50Ms: Math.round(r.p50),
    lagP95Ms: Math.round(r.p95),
    lagP99Ms: Math.round(r.p99),
    lagMaxMs: Math.round(r.max),
  };
}

async function natsReachable(): Promise<boolean> {
  try {
    const nc = await connect({ servers: NATS_URL, timeout: 1_000 });
    await nc.close();
    return true;
  } catch {
    return false;
  }
}

const services = await startTestServices(say);
Object.assign(process.env, services.env);
const db = await useTestDatabase();
// The webhook's receiver runs in its own process, as a real consumer would: it does not share the
// publisher's event loop.
const partner = spawnTs(['partner/main.ts', '--port', '0'], {});
const [, partnerUrl] = await partner.waitFor(/listening on (http:\S+)/, 30_000);
const stream = `BENCH_${randomUUID().slice(0, 8)}`;
const sinks: Sink[] = [
  createWebhookSink(
    createHttpClient({ connectTimeoutMs: 2_000, responseTimeoutMs: 10_000 }),
    new URL(`${partnerUrl}/events`),
  ),
];
if (await natsReachable()) {
  sinks.push(
    createNatsSink({
      servers: NATS_URL,
      stream,
      subjectPrefix: `bench-${stream}`,
      duplicateWindowMs: 120_000,
      timeoutMs: 10_000,
    }),
  );
} else {
  say(`NATS not reachable at ${NATS_URL}: measuring the webhook sink only`);
}
const results: Record<string, unknown>[] = [];

try {
  say(`plain INSERT…COMMIT loop, one client, ${EVENTS} rows…`);
  const insertRate = await insertLoop(db.url, EVENTS);
  results.push({ scenario: 'INSERT…COMMIT loop (1 client)', eventsPerSecond: Math.round(insertRate) });

  for (const sink of sinks) {
    // Warm-up: connections, JIT, stream creation.
    await relayRate(db, sink, 500);
    say(`relay to ${sink.name}: ${EVENTS} events waiting, one publisher…`);
    const relay = await relayRate(db, sink, EVENTS);
    results.push({
      scenario: `relay → ${sink.name} (1 publisher)`,
      eventsPerSecond: Math.round(relay),
      vsInsertLoop: +(relay / insertRate).toFixed(2),
    });
    const rate = Math.round(relay / 2);
    say(`relay to ${sink.name}: lag while producing ${rate} events/s for ${LAG_SECONDS} s…`);
    results.push({
      scenario: `lag → ${sink.name} at half peak (${rate}/s)`,
      ...(await lagAt(db, sink, rate, LAG_SECONDS)),
    });
  }
  console.table(results);
  console.log(
    JSON.stringify({ bench: 'outbox', cpus: (await import('node:os')).availableParallelism(), results }),
  );
} finally {
  for (const sink of sinks) await sink.close();
  if (sinks.some((s) => s.name === 'nats')) {
    const nc = await connect({ servers: NATS_URL });
    await (await jetstreamManager(nc)).streams.delete(stream).catch(() => false);
    await nc.close();
  }
  await partner.stop('SIGTERM', 10_000);
  await db.drop();
  await services.stop();
}
