/**
 * The application's Prometheus metrics (R10) and the `/metrics` endpoint every worker and
 * publisher process serves, beside its liveness and readiness probes (`/livez`, `/readyz`). Metric
 * names are a contract: ops/alerts.yml and docs/operations.md use them. The Temporal SDK's own
 * metrics (slots, polls, latencies, task failures) come from its runtime's Prometheus exporter on
 * an internal port and are appended to the same endpoint, so one scrape target covers both.
 */
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { NON_RETRYABLE_ERROR_TYPES, RETRYABLE_ERROR_TYPES } from '../../contract/error-types.ts';
import { breakerMetrics } from './breakers.ts';
import { orphanMetrics } from './orphans.ts';
import { runStateMetrics } from './runs.ts';

/** Buckets of run durations, seconds: a page takes well under a second, a big run minutes. */
const RUN_DURATION_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
/** Buckets of outbox relay lag (insert to publish), seconds. */
const LAG_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export function createMetrics() {
  const registry = new Registry();
  // Unprefixed: process_cpu_seconds_total, nodejs_heap_size_used_bytes… are the names stock
  // Node.js dashboards query.
  collectDefaultMetrics({ register: registry });
  const r = [registry];
  return {
    registry,
    runsStarted: new Counter({
      name: 'durable_fetch_runs_started_total',
      help: 'Runs claimed (started or taken up again), by source and job type.',
      labelNames: ['source', 'job_type'] as const,
      registers: r,
    }),
    runsFinished: new Counter({
      name: 'durable_fetch_runs_finished_total',
      help: 'Runs that ended, by source, job type, status (succeeded, dead_lettered, cancelled) and error type.',
      labelNames: ['source', 'job_type', 'status', 'error_type'] as const,
      registers: r,
    }),
    runDuration: new Histogram({
      name: 'durable_fetch_run_duration_seconds',
      help: 'Run duration from its first claim to its end, by source, job type and status.',
      labelNames: ['source', 'job_type', 'status'] as const,
      buckets: RUN_DURATION_BUCKETS,
      registers: r,
    }),
    activityRetries: new Counter({
      name: 'durable_fetch_activity_retries_total',
      help: 'Activity attempts that failed with a retryable error (a retry follows), by activity and error type.',
      labelNames: ['activity', 'error_type'] as const,
      registers: r,
    }),
    taskQueueBacklog: new Gauge({
      name: 'durable_fetch_task_queue_backlog',
      help: "Approximate number of tasks waiting in the task queue (Temporal's DescribeTaskQueue stats).",
      labelNames: ['task_queue', 'type'] as const,
      registers: r,
    }),
    taskQueueOldestAge: new Gauge({
      name: 'durable_fetch_task_queue_oldest_age_seconds',
      help: 'Age of the oldest task waiting in the task queue.',
      labelNames: ['task_queue', 'type'] as const,
      registers: r,
    }),
    // The one pre-computed rate (with the next): Temporal's DescribeTaskQueue gives only rates
    // (tasksAddRate, tasksDispatchRate), no cumulative count a counter could export.
    taskQueueAddRate: new Gauge({
      name: 'durable_fetch_task_queue_tasks_added_per_second',
      help: "Tasks added to the task queue per second (arrival), as Temporal's DescribeTaskQueue computes it: it exposes no count.",
      labelNames: ['task_queue', 'type'] as const,
      registers: r,
    }),
    taskQueueDispatchRate: new Gauge({
      name: 'durable_fetch_task_queue_tasks_dispatched_per_second',
      help: "Tasks dispatched from the task queue to workers per second (completion), as Temporal's DescribeTaskQueue computes it: it exposes no count.",
      labelNames: ['task_queue', 'type'] as const,
      registers: r,
    }),
    dependencyUp: new Gauge({
      name: 'durable_fetch_dependency_up',
      help: "Whether this process's last health sample reached the dependency: 1 yes, 0 no (database: PostgreSQL; temporal: the Temporal frontend).",
      labelNames: ['dependency'] as const,
      registers: r,
    }),
    outboxPending: new Gauge({
      name: 'durable_fetch_outbox_pending',
      help: 'Outbox events not yet published (pending, including retrying and in flight).',
      registers: r,
    }),
    outboxOldestPendingAge: new Gauge({
      name: 'durable_fetch_outbox_oldest_pending_age_seconds',
      help: 'Age of the oldest unpublished outbox event (0 when none).',
      registers: r,
    }),
    outboxPublished: new Counter({
      name: 'durable_fetch_outbox_published_total',
      help: 'Outbox events published, by sink.',
      labelNames: ['sink'] as const,
      registers: r,
    }),
    outboxFailed: new Counter({
      name: 'durable_fetch_outbox_failed_total',
      help: 'Failed outbox deliveries, by sink and error type.',
      labelNames: ['sink', 'error_type'] as const,
      registers: r,
    }),
    outboxDead: new Counter({
      name: 'durable_fetch_outbox_dead_total',
      help: 'Outbox events that went dead (attempts exhausted, permanent error or no route), by sink.',
      labelNames: ['sink'] as const,
      registers: r,
    }),
    relayLag: new Histogram({
      name: 'durable_fetch_outbox_relay_lag_seconds',
      help: 'Time from an outbox event being written to its publication.',
      buckets: LAG_BUCKETS,
      registers: r,
    }),
    deadLettersOpen: new Gauge({
      name: 'durable_fetch_dead_letters_open',
      help: 'Dead letters waiting for an operator.',
      registers: r,
    }),
    compensationsNeedsManual: new Gauge({
      name: 'durable_fetch_compensations_needs_manual',
      help: 'Downstream actions in needs_manual: compensation gave up, a human must settle them.',
      registers: r,
    }),
    credentialsNeedingReauthorization: new Gauge({
      name: 'durable_fetch_credentials_needing_reauthorization',
      help: 'OAuth2 credentials whose provider refused their refresh token: runs using them wait until `credentials set`.',
      registers: r,
    }),
    downstreamStrays: new Counter({
      name: 'durable_fetch_downstream_strays_total',
      help: 'Effects found at a partner that the ledger did not expect (strays, voided by the compensation path), by source.',
      labelNames: ['source'] as const,
      registers: r,
    }),
    ...runStateMetrics(r),
    downstreamStraysUnsettled: new Gauge({
      name: 'durable_fetch_downstream_strays_unsettled',
      help: 'Strays (effects at a partner the ledger did not expect) not yet voided: the sweep starts their compensation.',
      registers: r,
    }),
    leaseTakeovers: new Counter({
      name: 'durable_fetch_lease_takeovers_total',
      help: 'Outbox claims taken over after their lease ran out (a publisher died or stalled), by kind (outbox).',
      labelNames: ['kind'] as const,
      registers: r,
    }),
    downstreamRequests: new Counter({
      name: 'durable_fetch_downstream_requests_total',
      help: 'Calls to partners (pages, submissions), by source and outcome (ok, error).',
      labelNames: ['source', 'outcome'] as const,
      registers: r,
    }),
    downstreamLastSuccess: new Gauge({
      name: 'durable_fetch_downstream_last_success_timestamp_seconds',
      help: 'Unix time of the last successful call to the source’s partner.',
      labelNames: ['source'] as const,
      registers: r,
    }),
    ...orphanMetrics(r),
    ...breakerMetrics(r),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

const ERROR_TYPES: readonly string[] = [...RETRYABLE_ERROR_TYPES, ...NON_RETRYABLE_ERROR_TYPES];

/**
 * The `error_type` label of an error type: the contract's types (contract/error-types.ts) as they
 * are, any other type a job's code threw as `other`, none as empty. Keeps the label bounded.
 */
export function errorTypeLabel(errorType: string | null | undefined): string {
  if (!errorType) return '';
  return ERROR_TYPES.includes(errorType) ? errorType : 'other';
}

/**
 * Records a run's claim. Series of its end and of its partner calls appear when the first one
 * happens, never up front per status, error type or outcome (bounded series: docs/operations.md).
 * `jobType` labels the run series (a source belongs to one job, so it adds no series per source;
 * it lets dashboards sum by job).
 */
export function observeRunStarted(metrics: Metrics, source: string, jobType: string): void {
  metrics.runsStarted.inc({ source, job_type: jobType });
}

/** Records one partner call's outcome. */
export function observeDownstream(metrics: Metrics, source: string, ok: boolean, now = Date.now()): void {
  metrics.downstreamRequests.inc({ source, outcome: ok ? 'ok' : 'error' });
  if (ok) metrics.downstreamLastSuccess.set({ source }, now / 1000);
}

/** The probe paths the metrics server answers (deploy/k8s/ points its probes at them). */
export const PROBE_PATHS = { liveness: '/livez', readiness: '/readyz' } as const;

export interface MetricsServer {
  /** `http://host:port/metrics` */
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Serves, on one port:
 * - `GET /metrics` (Prometheus text format): `metrics`' registry, then — when `sdkMetricsUrl` is
 *   given — the Temporal SDK runtime's own exposition, fetched on each scrape;
 * - `GET /livez`: 200 whenever the event loop answers (a blocked loop answers nothing, and the
 *   probe times out);
 * - `GET /readyz`: 200 while `ready()` holds, else 503 (default: ready once listening).
 * Resolves once listening; rejects on a bind error (e.g. the port is taken: set
 * DURABLE_FETCH_METRICS_PORT).
 */
export async function startMetricsServer(
  metrics: Metrics,
  options: { host: string; port: number; sdkMetricsUrl?: string; ready?: () => boolean },
): Promise<MetricsServer> {
  const ready = options.ready ?? (() => true);
  const server: Server = createServer((req, res) => {
    const text = { 'content-type': 'text/plain' };
    if (req.method === 'GET' && req.url === PROBE_PATHS.liveness) {
      res.writeHead(200, text).end('alive\n');
      return;
    }
    if (req.method === 'GET' && req.url === PROBE_PATHS.readiness) {
      const yes = ready();
      res.writeHead(yes ? 200 : 503, text).end(yes ? 'ready\n' : 'not ready\n');
      return;
    }
    if (req.url !== '/metrics' || req.method !== 'GET') {
      res.writeHead(404, text).end('try GET /metrics, /livez or /readyz\n');
      return;
    }
    void (async () => {
      let body = await metrics.registry.metrics();
      if (options.sdkMetricsUrl) {
        const sdk = await fetch(options.sdkMetricsUrl, { signal: AbortSignal.timeout(2_000) })
          .then((r) => (r.ok ? r.text() : ''))
          .catch(() => '');
        if (sdk) body += `\n${sdk}`;
      }
      res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body);
    })().catch((err: unknown) => {
      res.writeHead(500, text).end(`metrics failed: ${String(err)}\n`);
    });
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(
              `metrics port ${options.port} is in use: set DURABLE_FETCH_METRICS_PORT (0 = any free port)`,
            )
          : err,
      ),
    );
    server.listen(options.port, options.host, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : options.port);
    });
  });
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  return {
    url: `http://${host}:${port}/metrics`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
