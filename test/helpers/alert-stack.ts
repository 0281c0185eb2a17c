/**
 * What each scenario of the alert fault suite stands on: its own cloned database, the demo
 * partner, one real `durable-fetch worker` and one real `durable-fetch publisher` on a task queue
 * of its own (both sampling health every second), and a real Prometheus scraping both with the
 * scaled rules of ops/alerts.yml (test/helpers/prometheus.ts).
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { startFetch } from '../../client/start-fetch.ts';
import { startPartner, type PartnerServer } from '../../partner/server.ts';
import { createDownstream } from './breaker-watch.ts';
import { useTestDatabase, type TestDatabase } from './database.ts';
import { createSource } from './deps.ts';
import { metricsUrlOf, spawnTs, spawnWorker, type Spawned } from './process.ts';
import { startPrometheus, type PrometheusServer } from './prometheus.ts';

/**
 * The downstream's breaker and retry budget with their default windows and open time (60 s, 60 s,
 * 30 s) divided by the suite's scale, like the rules' windows: otherwise a 60 s budget window
 * outlasts a scaled `for` and holds retries back well after a recovery (seen: the retry-budget
 * alert fired 48 s after the partner was back at scale 20). Opens at half of 4 calls.
 */
function downstreamSettings(id: string, scale: number) {
  return {
    id,
    breaker: {
      failureRate: 0.5,
      minCalls: 4,
      windowMs: 60_000 / scale,
      openMs: 30_000 / scale,
      trialCalls: 1,
    },
    retryBudget: { windowMs: Math.max(1_000, Math.round(60_000 / scale)) },
  };
}
/** Records per run: two pages of 50. */
const RECORDS = 100;

export interface AlertStack {
  db: TestDatabase;
  partner: PartnerServer;
  client: Client;
  taskQueue: string;
  /** The scenario's source (and `<source>-ds`, its downstream). */
  source: string;
  worker: Spawned;
  publisher: Spawned;
  prometheus: PrometheusServer;
  /** Starts (or joins) one run of the source per date; resolves once all are started. */
  startRuns(dates: readonly string[]): Promise<void>;
  /** Everything the processes printed, for a failure message. */
  output(): string;
  /** Stops Prometheus and the processes, closes the partner and drops the database. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts the stack of scenario `name` against the Temporal server at `temporalAddress`; resolves
 * once the worker polls and Prometheus has loaded the rules. On failure stops what had started.
 */
export async function startAlertStack(options: {
  name: string;
  temporalAddress: string;
  rulesText: string;
  /** The rules' time scale: the downstream's windows are divided by it too. */
  scale: number;
  intervalSeconds: number;
  /** Delay of every partner page, ms (runs stay in flight that long per page); default none. */
  pageDelayMs?: number;
}): Promise<AlertStack> {
  const stops: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const fn of stops.splice(0).reverse()) await fn().catch(() => undefined);
  };
  try {
    const source = `alertsprom-${options.name}`;
    const taskQueue = `test-alertsprom-${options.name}-${randomUUID()}`;
    const db = await useTestDatabase();
    stops.push(() => db.drop());
    const partner = await startPartner({ port: 0, recordCount: () => RECORDS });
    stops.push(() => partner.close());
    if (options.pageDelayMs) {
      partner.faults.add({ sourceId: source, kind: 'delay', delayMs: options.pageDelayMs, times: 1_000_000 });
    }
    const connection = await Connection.connect({ address: options.temporalAddress });
    stops.push(() => connection.close());
    const client = new Client({ connection });
    await createDownstream(db.prisma, downstreamSettings(`${source}-ds`, options.scale));
    await createSource(db.prisma, source, partner.url, { downstream: `${source}-ds`, pageSize: 50 });
    const env = {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: options.temporalAddress,
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
      DURABLE_FETCH_METRICS_SAMPLE_MS: String(options.intervalSeconds * 1000),
      DURABLE_FETCH_WEBHOOK_URL: `${partner.url}/events`,
      PARTNER_PAGE_LIMIT: '50',
      LOG_LEVEL: 'warn',
    };
    const worker = spawnWorker(env);
    stops.push(() => worker.stop('SIGKILL', 5_000));
    const publisher = spawnTs(['bin/durable-fetch.js', 'publisher'], env);
    stops.push(() => publisher.stop('SIGKILL', 5_000));
    const metricsUrls = await Promise.all([metricsUrlOf(worker), metricsUrlOf(publisher)]);
    await worker.waitFor(/worker polling task queue/, 60_000);
    const prometheus = await startPrometheus({
      rulesText: options.rulesText,
      metricsUrls,
      intervalSeconds: options.intervalSeconds,
    });
    stops.push(() => prometheus.stop());
    const ctx = {
      temporal: client,
      prisma: db.prisma,
      taskQueue,
      now: () => new Date('2026-11-30T12:00:00Z'),
    };
    return {
      db,
      partner,
      client,
      taskQueue,
      source,
      worker,
      publisher,
      prometheus,
      async startRuns(dates) {
        await Promise.all(
          dates.map((date) => startFetch(ctx, { sourceId: source, date, requestedBy: 'test' })),
        );
      },
      output: () => `worker:\n${worker.output()}\npublisher:\n${publisher.output()}`,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** `count` distinct business dates from 2026-01-01 on, starting `offset` days in. */
export function datesFrom(offset: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) =>
    new Date(Date.UTC(2026, 0, 1 + offset + i)).toISOString().slice(0, 10),
  );
}
