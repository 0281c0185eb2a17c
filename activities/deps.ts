import type { Logger } from 'pino';
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { Metrics } from '../runtime/metrics/metrics.ts';
import type { DownstreamSettings } from '../db/ledger/downstreams.ts';
import type { CrashPoint } from '../runtime/crash-points.ts';
import type { HttpClient } from './http.ts';
import type { JobRegistry } from './job-api/registry.ts';
import type { TokenProvider } from './credentials/token-provider.ts';

/** What activities need from the outside world, injected so tests can pass real or fake parts. */
export interface ActivityDeps {
  prisma: PrismaClient;
  /** The jobs this worker runs; a source's runs use the job of its `jobType`. */
  jobs: JobRegistry;
  http: HttpClient;
  log: Logger;
  /** Wall clock; injected so tests can pin it. */
  now: () => Date;
  /** Resolves a source's credentials reference (an env var name) to the secret at run time (R2). */
  secret: (ref: string) => string | undefined;
  /** OAuth2 access tokens (docs/credentials.md); absent without a credentials key. */
  tokens?: TokenProvider;
  /** How long a claim stays valid without progress; every stored page renews it (R1). */
  leaseTtlMs: number;
  /** How long idempotency records are kept (the dedupe window of a step). */
  idempotencyRetentionMs: number;
  /**
   * The settings of a downstream (R8: its breaker and retry budget), read on every partner call;
   * the production wiring caches them for a few seconds (db/ledger/downstreams.ts).
   */
  downstreams: (id: string) => Promise<DownstreamSettings>;
  /**
   * The deployment's task queue (workflows and the shared activities): an isolated downstream's
   * page fetches go to `downstreamTaskQueue(taskQueue, id)`, which its workers poll (R8).
   */
  taskQueue: string;
  /** Largest partner page requested at once. */
  partnerPageLimit: number;
  /** The process's Prometheus metrics: runs, retries, partner calls. */
  metrics: Metrics;
  /**
   * Aborted by the worker once its shutdown grace time is over: the partner calls still running as
   * local activities stop then (activities/pages/local-stop.ts). Absent: they are never stopped so.
   */
  stopping?: AbortSignal;
  /** Test-only (R12a): the crash point armed in this process, if any. */
  crashPoint?: CrashPoint;
}
