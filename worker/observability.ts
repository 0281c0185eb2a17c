/**
 * What every long-running process (worker, publisher, `npm start`) sets up for operators (issue
 * #8): the Temporal SDK runtime with its log routed to ours and its metrics exported, the
 * `/metrics` endpoint, and the health sampler (backlog, outbox, dead letters, compensations).
 */
import { createServer } from 'node:net';
import type { Client } from '@temporalio/client';
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { Config } from '../runtime/config.ts';
import { type Sampler, startSampler } from '../client/health.ts';
import type { Logger } from '../runtime/logger.ts';
import {
  createMetrics,
  type Metrics,
  type MetricsServer,
  startMetricsServer,
} from '../runtime/metrics/metrics.ts';
import { installRuntimeLogger } from './runtime-logger.ts';

/** A free TCP port on 127.0.0.1 (for the SDK's internal exporter, which needs a fixed address). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export interface Runtime {
  metrics: Metrics;
  /** Where the SDK's own Prometheus exporter listens (internal), when metrics are on. */
  sdkMetricsUrl?: string;
}

/**
 * Installs the Temporal SDK runtime: its log into `log` (WARN and up) and, when metrics are on,
 * its metrics on an internal port. Must run before the process's first Temporal connection.
 */
export async function installRuntime(config: Config, log: Logger): Promise<Runtime> {
  const metrics = createMetrics();
  if (!config.metrics.enabled) {
    installRuntimeLogger(log);
    return { metrics };
  }
  const port = await freePort();
  installRuntimeLogger(log, 'WARN', { sdkMetricsAddress: `127.0.0.1:${port}` });
  return { metrics, sdkMetricsUrl: `http://127.0.0.1:${port}/metrics` };
}

export interface Observability {
  /** `http://…/metrics`, when metrics are on. */
  url?: string;
  stop(): Promise<void>;
}

/**
 * Serves `/metrics` (the app's metrics and the SDK's) with the `/livez` and `/readyz` probes
 * (`ready`), and starts the health sampler of `taskQueues` and of the isolated downstreams' queues
 * of `isolatedQueuesOf`. Both are off when `DURABLE_FETCH_METRICS_ENABLED=false`.
 * @throws when the metrics port is taken (the message names DURABLE_FETCH_METRICS_PORT).
 */
export async function startObservability(
  config: Config,
  runtime: Runtime,
  options: {
    prisma: PrismaClient;
    temporal: () => Promise<Client>;
    log: Logger;
    /** Whether `/readyz` answers 200: asked on each probe. */
    ready: () => boolean;
    taskQueues: readonly string[];
    /** The deployment's task queue, whose isolated downstreams' queues are sampled too. */
    isolatedQueuesOf?: string;
  },
): Promise<Observability> {
  if (!config.metrics.enabled) return { stop: async () => {} };
  const server: MetricsServer = await startMetricsServer(runtime.metrics, {
    host: config.metrics.host,
    port: config.metrics.port,
    ready: options.ready,
    ...(runtime.sdkMetricsUrl ? { sdkMetricsUrl: runtime.sdkMetricsUrl } : {}),
  });
  const sampler: Sampler = startSampler({
    prisma: options.prisma,
    temporal: options.temporal,
    namespace: config.temporal.namespace,
    taskQueues: options.taskQueues,
    ...(options.isolatedQueuesOf === undefined ? {} : { isolatedQueuesOf: options.isolatedQueuesOf }),
    metrics: runtime.metrics,
    intervalMs: config.metrics.sampleMs,
    log: options.log,
  });
  return {
    url: server.url,
    async stop() {
      await sampler.stop();
      await server.close();
    },
  };
}
