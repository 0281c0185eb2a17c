/**
 * The one boot of every long-running process — `durable-fetch worker`, `durable-fetch publisher`
 * and `npm start`: configuration, the logger, the Temporal SDK runtime, the database pool, the
 * Temporal client, `/metrics` with the health sampler, SIGINT/SIGTERM and the graceful stop. Each
 * process adds only what it runs (worker/run-worker.ts, worker/outbox/run-publisher.ts,
 * worker/stack/start.ts).
 *
 * Stopping: the first SIGINT/SIGTERM, a part that ends by itself ({@link ProcessRuntime.watch}) or
 * a failure while starting stops everything that was started, newest first, each in turn (the
 * worker lets its running activities finish for DURABLE_FETCH_SHUTDOWN_GRACE_MS, the publisher its
 * deliveries for DURABLE_FETCH_OUTBOX_GRACE_MS). Stopped by a signal or a part's end, the process
 * exits 0 (1 when something failed to stop); after a failure, {@link bootProcess} rejects with it.
 * A second signal exits at once with 128 + its number (130 for SIGINT, 143 for SIGTERM).
 */
import type { Client } from '@temporalio/client';
import { Runtime as TemporalRuntime } from '@temporalio/worker';
import { checkDatabase, prismaConnection } from '../client/database-check.ts';
import { createPrisma, type PoolOptions, type PrismaClient } from '../db/client.ts';
import { type Config, databaseUrl, loadConfig } from '../runtime/config.ts';
import { createLogger, type Logger } from '../runtime/logger.ts';
import { createMetrics, type Metrics } from '../runtime/metrics/metrics.ts';
import { connectClient } from '../runtime/temporal.ts';
import { startTracing } from '../runtime/tracing-env.ts';
import { installRuntime, type Observability, type Runtime, startObservability } from './observability.ts';

/** Why a process stops. */
export interface StopReason {
  /** The first SIGINT or SIGTERM. */
  signal?: NodeJS.Signals;
  /** The part ({@link ProcessRuntime.watch}) that ended by itself, failing or not. */
  part?: string;
  /** What failed, when something did (present even if it threw `undefined`): that part, or the start. */
  error?: unknown;
}

export interface BootOptions {
  /** The process's name: the `process` field of its log lines. */
  name: string;
  /** Default: read from the environment (runtime/config.ts). */
  config?: Config;
  /** Default: the configuration's (LOG_LEVEL). */
  logLevel?: string;
  /**
   * It runs Temporal workers: install the SDK's runtime first (its log into ours, its metrics on
   * `/metrics`). A process that only uses a client does not load it.
   */
  temporalWorkers?: boolean;
  /** Where the one-line notices go: the console of the person who started it. */
  say: (line: string) => void;
  /** Prints a failure to stop something; default `console.error('<name>: <line>', err)`. */
  printError?: (line: string, err: unknown) => void;
  /** Says that it stops, and why, before anything is stopped. */
  stopping?: (why: StopReason, rt: ProcessRuntime) => void;
  /** Says that a second signal stops it at once, just before it exits. */
  stoppingNow?: (signal: NodeJS.Signals) => void;
  /** Once everything has stopped; `clean` when nothing failed (to start, to run or to stop). */
  stopped?: (why: StopReason, clean: boolean) => void;
}

/** What a process runs on: built by {@link bootProcess}, everything it opens closed at the stop. */
export interface ProcessRuntime {
  config: Config;
  log: Logger;
  /** The process's metrics (served by {@link serveMetrics}). */
  metrics: Metrics;
  say: (line: string) => void;
  /**
   * Opens a database pool (default URL: the configuration's) and checks it answers and is
   * migrated; disconnected at the stop. A process opens one, sized for what it runs
   * (worker/pool-size.ts). @throws UserFacingError when the database cannot be used.
   */
  database(pool: PoolOptions, url?: string): Promise<PrismaClient>;
  /**
   * The process's Temporal client: connected on the first call (again after a failed one), closed
   * at the stop. @throws UserFacingError when Temporal is unreachable.
   */
  temporal: () => Promise<Client>;
  /**
   * Serves `/metrics`, `/livez` and `/readyz`, and samples the health of the task queue and
   * `prisma`'s database (off with DURABLE_FETCH_METRICS_ENABLED=false); stopped at the stop.
   */
  serveMetrics(prisma: PrismaClient): Promise<Observability>;
  /**
   * Says what makes the process ready (`/readyz` 200): `check` is asked on each probe. Until this
   * is called, and from the moment the stop begins, the process is not ready (503), so that an
   * orchestrator sends it no work before it polls or claims, nor while it drains.
   */
  readyWhen(check: () => boolean): void;
  /** Adds something to stop: the stop goes newest first. */
  onStop(name: string, close: () => Promise<unknown>): void;
  /**
   * Adds a part that runs until stopped: `done` settles once it has ended; `stop()` asks it to end.
   * When it ends by itself, the process stops, failed when it failed.
   */
  watch(name: string, done: Promise<void>, stop: () => void): void;
}

/** Exit code of a process stopped by `signal` (128 + its number), as shells report it. */
const signalExitCode = (signal: NodeJS.Signals) => (signal === 'SIGINT' ? 130 : 143);

/**
 * Builds the process's runtime, runs `start` on it (what the process adds: it returns once that is
 * running), then waits for a signal or a part's end, and stops. Returns only by exiting the
 * process; rejects (once everything is stopped) when starting or a part failed.
 */
export async function bootProcess(
  options: BootOptions,
  start: (rt: ProcessRuntime) => Promise<void>,
): Promise<never> {
  const config = options.config ?? loadConfig();
  const log = createLogger(options.logLevel ?? config.logLevel, { process: options.name });
  // Before anything that makes spans: the Temporal client and workers, the pool, the publisher.
  const tracing = await startTracing(options.name);
  // Before the process's first Temporal connection.
  const sdk: Runtime = options.temporalWorkers
    ? await installRuntime(config, log)
    : { metrics: createMetrics() };
  const printError =
    options.printError ?? ((line: string, err: unknown) => console.error(`${options.name}: ${line}`, err));

  let why: StopReason | undefined;
  let wake: (reason: StopReason) => void = () => {};
  const stopRequested = new Promise<StopReason>((resolve) => (wake = resolve));
  const stopFor = (reason: StopReason) => {
    if (why) return;
    why = reason;
    wake(reason);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (why) {
      // "Now": whatever is still running is left to its own recovery (leases, heartbeats).
      options.stoppingNow?.(signal);
      process.exit(signalExitCode(signal));
    }
    stopFor({ signal });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  let readyCheck: () => boolean = () => false;
  const ready = () => why === undefined && readyCheck();

  const closers: { name: string; close: () => Promise<unknown> }[] = [];
  const onStop = (name: string, close: () => Promise<unknown>) => void closers.push({ name, close });
  // Stopped last: what the other parts do while they stop is traced and exported too.
  if (tracing) onStop('tracing', () => tracing.shutdown());
  // A start that fails before the first native connection (the client, which is not one, comes
  // first) leaves the SDK's runtime running idle, and its log forwarding keeps the process alive
  // after the failure is printed. A no-op when closing its connections and workers shut it down.
  const sdkRuntime = options.temporalWorkers ? TemporalRuntime.instance() : undefined;
  if (sdkRuntime) onStop('temporal runtime', () => sdkRuntime.shutdown());

  let client: Promise<Client> | undefined;
  let temporalState: 'unused' | 'open' | 'closed' = 'unused';
  const temporal = (): Promise<Client> => {
    if (temporalState === 'closed') return Promise.reject(new Error('the Temporal client is closed'));
    if (temporalState === 'unused') {
      temporalState = 'open';
      onStop('temporal client', async () => {
        temporalState = 'closed';
        const open = await client?.catch(() => undefined);
        await open?.connection.close();
      });
    }
    client ??= connectClient(config).catch((err: unknown) => {
      client = undefined;
      throw err;
    });
    return client;
  };

  const rt: ProcessRuntime = {
    config,
    log,
    metrics: sdk.metrics,
    say: options.say,
    async database(pool, url = databaseUrl(config)) {
      const prisma = createPrisma(url, {
        ...pool,
        preparedStatements: config.database.preparedStatements,
        pooling: config.database.pooling,
      });
      await checkDatabase(prismaConnection(prisma), url, config);
      onStop('prisma', () => prisma.$disconnect());
      return prisma;
    },
    temporal,
    async serveMetrics(prisma) {
      const observability = await startObservability(config, sdk, {
        prisma,
        temporal,
        log,
        ready,
        taskQueues: [config.temporal.taskQueue],
        isolatedQueuesOf: config.temporal.taskQueue,
      });
      onStop('metrics', () => observability.stop());
      return observability;
    },
    readyWhen(check) {
      readyCheck = check;
    },
    onStop,
    watch(name, done, stop) {
      // Settles once the part has ended; a failure after the stop began is the stop's (below).
      const ended = done.then(
        () => stopFor({ part: name }),
        (error: unknown) => {
          if (why) throw error;
          stopFor({ part: name, error });
        },
      );
      // Handled here too: a failure before its turn in the stop must not go unhandled meanwhile.
      ended.catch(() => undefined);
      onStop(name, async () => {
        stop();
        await ended;
      });
    },
  };

  // A start that fails stops the process; once it is stopping, a start still under way may fail as
  // what it uses is closed under it: that is no news.
  void start(rt).catch((error: unknown) => stopFor({ error }));
  const reason = await stopRequested;

  options.stopping?.(reason, rt);
  let stopFailed = false;
  // Newest first; something added while stopping is stopped next.
  for (let closer = closers.pop(); closer; closer = closers.pop()) {
    try {
      await closer.close();
    } catch (err) {
      stopFailed = true;
      printError(`stopping ${closer.name} failed:`, err);
    }
  }
  const failed = 'error' in reason;
  options.stopped?.(reason, !failed && !stopFailed);
  if (failed) throw reason.error;
  // Exit, not return: a start still under way (a signal came first) must not keep it alive.
  process.exit(stopFailed ? 1 : 0);
}
