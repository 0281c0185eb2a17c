/**
 * The outbox publisher (R5, R1): a loop that claims due events under a lease, delivers them to
 * their sinks and marks them published only while its claim still holds. Run as many replicas as
 * you like; they share the work through the claim and never overwrite each other's state.
 *
 * Guarantees (docs/outbox.md): at-least-once delivery; per-aggregate order; duplicates when a
 * lease expired (a publisher stalled or died between the sink's ack and its mark) or when a
 * delivery the sink did apply was reported failed (response timeout, aborted by stop); every
 * failure classified, retried with full-jitter backoff, and `dead` after `maxAttempts` or at once
 * when retrying cannot help.
 */
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CrashPoint } from '../../runtime/crash-points.ts';
import { type Backoff, fullJitterMs } from '../../activities/retry/delay.ts';
import { claimBatch, releaseClaims } from '../../db/outbox/outbox.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { Metrics } from '../../runtime/metrics/metrics.ts';
import { type DeliveryContext, deliverBatch } from './deliver.ts';
import { DB_RETRY, type PublisherStats, safeError, type SettleContext, settleBatch } from './settle.ts';
import type { Route, SinkName } from '../../contract/outbox-routes.ts';
import type { Sink } from './sinks.ts';

export type { PublisherStats } from './settle.ts';

/** Claim-and-deliver loops of a publisher process when its options name none. */
export const DEFAULT_PUBLISHER_LOOPS = 2;

export interface PublisherOptions {
  /** Events per claim. */
  batchSize: number;
  /** Aggregates delivered in parallel within a batch (one aggregate's events go one at a time). */
  concurrency: number;
  /** Lease of a claim. A delivery is not started when less than a fifth of it is left. */
  leaseMs: number;
  /** Wait between claims when there was nothing to claim. */
  pollMs: number;
  /**
   * Claim-and-deliver loops in this process (default {@link DEFAULT_PUBLISHER_LOOPS}): while one loop writes its marks and
   * claims, another delivers. Each loop claims under its own token, exactly like another replica.
   */
  loops?: number | undefined;
  /** Failed deliveries before an event goes `dead`. */
  maxAttempts: number;
  backoff: Backoff;
  routes: readonly Route[];
  /** Test-only: see runtime/crash-points.ts. */
  crashPoint?: CrashPoint | undefined;
  /** The process's Prometheus metrics: published, failed, dead, relay lag, takeovers. */
  metrics?: Metrics | undefined;
}

export class Publisher {
  readonly stats: PublisherStats = {
    batches: 0,
    published: 0,
    failed: 0,
    dead: 0,
    lostClaims: 0,
    released: 0,
    databaseErrors: 0,
  };
  readonly #db: PrismaClient;
  readonly #options: PublisherOptions;
  readonly #log: Logger;
  /** Stops claiming and wakes the idle wait. */
  readonly #stopping = new AbortController();
  /** Aborts deliveries in flight (the grace time is over). */
  readonly #abort = abortController();
  readonly #delivery: DeliveryContext;
  readonly #settle: SettleContext;
  /**
   * Tokens of claims that failed without an answer: they may have committed (the connection
   * failed after the claim ran), and then hold their events for a whole lease, delivered by no
   * one. Given back before the next claim, once the database answers.
   */
  readonly #unanswered = new Set<string>();
  #loop: Promise<void> | undefined;

  constructor(db: PrismaClient, sinks: ReadonlyMap<SinkName, Sink>, options: PublisherOptions, log: Logger) {
    this.#db = db;
    this.#options = options;
    this.#log = log;
    this.#delivery = {
      sinks,
      routes: options.routes,
      concurrency: options.concurrency,
      backoff: options.backoff,
      crashPoint: options.crashPoint,
      stopping: this.#stopping.signal,
      abort: this.#abort.signal,
    };
    this.#settle = {
      db,
      stats: this.stats,
      log,
      metrics: options.metrics,
      maxAttempts: options.maxAttempts,
      leaseMs: options.leaseMs,
      abort: this.#abort.signal,
    };
  }

  /** Starts the loops in the background. Errors never escape them: they are logged and retried. */
  start(): void {
    const loops = this.#options.loops ?? DEFAULT_PUBLISHER_LOOPS;
    this.#loop ??= Promise.all(Array.from({ length: loops }, () => this.#run())).then(() => undefined);
  }

  /** Its loops run and claim: from {@link start} until {@link stop} is called. */
  get claiming(): boolean {
    return this.#loop !== undefined && !this.#stopping.signal.aborted;
  }

  /**
   * Graceful stop (R9): no new claims; deliveries in flight get `graceMs` to finish, then are
   * aborted; whatever was claimed and not delivered is released for other publishers. Resolves
   * when the loop has ended. Calling it again is harmless.
   */
  async stop(graceMs: number): Promise<void> {
    this.#stopping.abort();
    if (!this.#loop) return;
    const timer = setTimeout(() => this.#abort.abort(new Error('publisher stopping')), graceMs);
    try {
      await this.#loop;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * One claim and its deliveries; returns how many events were claimed. The loop calls this; tests
   * may call it directly.
   */
  async runOnce(): Promise<number> {
    if (this.#unanswered.size > 0) {
      const tokens = [...this.#unanswered];
      const released = await releaseClaims(this.#db, tokens);
      for (const t of tokens) this.#unanswered.delete(t);
      if (released > 0) this.#log.info({ released }, 'outbox events of unanswered claims given back');
    }
    const token = randomUUID();
    const claimedAt = Date.now();
    let events: Awaited<ReturnType<typeof claimBatch>>;
    try {
      events = await claimBatch(this.#db, {
        token,
        limit: this.#options.batchSize,
        leaseMs: this.#options.leaseMs,
      });
    } catch (err) {
      this.#unanswered.add(token);
      throw err;
    }
    if (events.length === 0) return 0;
    this.stats.batches++;
    const takenOver = events.filter((e) => e.takenOver).length;
    if (takenOver > 0) this.#options.metrics?.leaseTakeovers.inc({ kind: 'outbox' }, takenOver);
    // No delivery starts in the last fifth of the lease, and every delivery is cut off when a tenth
    // is left, so the batch is settled while the claim still holds (a late mark would be rejected,
    // and a delivery past the lease may race the next owner's).
    const deadline = claimedAt + this.#options.leaseMs * 0.8;
    const cutoff = claimedAt + this.#options.leaseMs * 0.9;
    const outcomes = await deliverBatch(this.#delivery, events, deadline, cutoff);
    await settleBatch(this.#settle, token, outcomes);
    return events.length;
  }

  async #run(): Promise<void> {
    let dbFailures = 0;
    while (!this.#stopping.signal.aborted) {
      let claimed: number;
      try {
        claimed = await this.runOnce();
        dbFailures = 0;
      } catch (err) {
        this.stats.databaseErrors++;
        dbFailures++;
        const waitMs = fullJitterMs(dbFailures, DB_RETRY) + 50;
        this.#log.warn({ err: safeError(err), waitMs }, 'outbox claim failed; retrying');
        await this.#idle(waitMs);
        continue;
      }
      // Anything claimed means more may be due (a batch comes up short when other loops hold the
      // next events of its aggregates): claim again at once; wait only when nothing was due.
      if (claimed === 0) await this.#idle(this.#options.pollMs);
    }
  }

  #idle(ms: number): Promise<void> {
    return sleep(ms, undefined, { signal: this.#stopping.signal }).catch(() => undefined);
  }
}

/** Every delivery in flight listens to this one signal: lift Node's 10-listener warning. */
function abortController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}
