/**
 * Production wiring of the outbox publisher from configuration: the sinks its routes need, the
 * publisher loop and the retention pass for published events. Used by `durable-fetch publisher`
 * and `npm start`.
 */
import type { Client } from '@temporalio/client';
import { startPeriodicCleanup } from '../../activities/cleanup.ts';
import { createHttpClient } from '../../activities/http.ts';
import type { Config } from '../../runtime/config.ts';
import type { PrismaClient } from '../../db/client.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { Metrics } from '../../runtime/metrics/metrics.ts';
import { createNatsSink } from './nats-sink.ts';
import { Publisher, type PublisherOptions } from './publisher.ts';
import type { SinkName } from '../../contract/outbox-routes.ts';
import type { Sink } from './sinks.ts';
import { createStartWorkflowSink } from './start-workflow-sink.ts';
import { createWebhookSink } from './webhook-sink.ts';

/** The publisher options configuration gives (DURABLE_FETCH_OUTBOX_*). */
export function publisherOptions(config: Config): PublisherOptions {
  const o = config.outbox;
  return {
    batchSize: o.batchSize,
    concurrency: o.concurrency,
    leaseMs: o.leaseMs,
    pollMs: o.pollMs,
    maxAttempts: o.maxAttempts,
    backoff: o.backoff,
    routes: o.routes,
    crashPoint: config.crashPoint,
  };
}

/**
 * Builds the sinks that at least one route names. `temporal` is needed only when a route sends
 * start commands; a connection is opened for it lazily by the caller's `temporal()`.
 */
export async function createSinks(
  config: Config,
  temporal: () => Promise<Client>,
): Promise<Map<SinkName, Sink>> {
  const sinks = new Map<SinkName, Sink>();
  for (const name of new Set(config.outbox.routes.map((r) => r.sink))) {
    switch (name) {
      case 'webhook':
        sinks.set(name, createWebhookSink(createHttpClient(config.http), new URL(config.outbox.webhookUrl)));
        break;
      case 'nats':
        sinks.set(name, createNatsSink({ ...config.outbox.nats, timeoutMs: config.http.responseTimeoutMs }));
        break;
      case 'temporal':
        sinks.set(name, createStartWorkflowSink(await temporal()));
        break;
    }
  }
  return sinks;
}

export interface RunningPublisher {
  publisher: Publisher;
  /** Graceful stop (grace from config), then closes sinks and the retention timer. */
  stop(): Promise<void>;
}

/** Starts a publisher with its sinks and the periodic retention of published events. */
export async function startPublisher(
  config: Config,
  prisma: PrismaClient,
  temporal: () => Promise<Client>,
  log: Logger,
  metrics?: Metrics,
): Promise<RunningPublisher> {
  const sinks = await createSinks(config, temporal);
  const publisher = new Publisher(prisma, sinks, { ...publisherOptions(config), metrics }, log);
  publisher.start();
  const retention = startPeriodicCleanup(prisma, {
    intervalMs: config.runs.cleanupIntervalMs,
    log,
    publishedEventRetentionMs: config.outbox.retentionMs,
    // Up to 10 million rows per pass: at 10-minute passes, retention keeps up with ~16,000
    // events/s. Each batch of 1,000 is its own short statement.
    maxBatches: 10_000,
  });
  let stopping: Promise<void> | undefined;
  return {
    publisher,
    stop: () =>
      (stopping ??= (async () => {
        await publisher.stop(config.outbox.graceMs);
        await retention.stop();
        await Promise.all([...sinks.values()].map((s) => s.close()));
        log.info({ ...publisher.stats }, 'publisher stopped');
      })()),
  };
}
