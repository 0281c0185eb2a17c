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
import { ApplicationFailure } from '@temporalio/common';
import { crashPoint, type CrashPoint } from '../../activities/crash-points.ts';
import { classify, detailsOf, failure } from '../../activities/errors.ts';
import { type Backoff, fullJitterMs, nextRetry } from '../../activities/retry-delay.ts';
import type { Prisma, PrismaClient } from '../../prisma/generated/client.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { Metrics } from '../../runtime/metrics.ts';
import { redactUrlsIn } from '../../runtime/redact.ts';
import { type Route, type Sink, type SinkName, sinkFor } from './sinks.ts';
import {
  claimBatch,
  type ClaimedEvent,
  type FailedDelivery,
  markFailed,
  markPublished,
  release,
} from '../../db/outbox.ts';

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
   * Claim-and-deliver loops in this process (default 2): while one loop writes its marks and
   * claims, another delivers. Each loop claims under its own token, exactly like another replica.
   */
  loops?: number;
  /** Failed deliveries before an event goes `dead`. */
  maxAttempts: number;
  backoff: Backoff;
  routes: readonly Route[];
  /** Test-only: see activities/crash-points.ts. */
  crashPoint?: CrashPoint | undefined;
  /** The process's Prometheus metrics (issue #8): published, failed, dead, relay lag, takeovers. */
  metrics?: Metrics | undefined;
}

/** Running totals of one publisher, for logs, tests and the benchmark. */
export interface PublisherStats {
  batches: number;
  published: number;
  failed: number;
  dead: number;
  /**
   * Events whose mark (published, failed or released) matched nothing: another publisher had
   * taken them over (or, rarely, a mark committed but its reply was lost and its retry found
   * nothing left to do).
   */
  lostClaims: number;
  released: number;
  /** Claims or marks that failed on the database and were retried. */
  databaseErrors: number;
}

type Outcome =
  | { kind: 'delivered'; id: string; result: Prisma.InputJsonValue | null; sink: string; createdAt: Date }
  | { kind: 'failed'; failure: FailedDelivery }
  | { kind: 'released'; id: string };

const DB_RETRY: Backoff = { initialMs: 100, coefficient: 2, maximumMs: 5_000 };

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
  readonly #sinks: ReadonlyMap<SinkName, Sink>;
  readonly #options: PublisherOptions;
  readonly #log: Logger;
  /** Stops claiming and wakes the idle wait. */
  readonly #stopping = new AbortController();
  /** Aborts deliveries in flight (the grace time is over). */
  readonly #abort = abortController();
  #loop: Promise<void> | undefined;

  constructor(db: PrismaClient, sinks: ReadonlyMap<SinkName, Sink>, options: PublisherOptions, log: Logger) {
    this.#db = db;
    this.#sinks = sinks;
    this.#options = options;
    this.#log = log;
  }

  /** Starts the loop in the background. Errors never escape it: they are logged and retried. */
  start(): void {
    this.#loop ??= Promise.all(Array.from({ length: this.#options.loops ?? 2 }, () => this.#run())).then(
      () => undefined,
    );
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
    const token = randomUUID();
    const claimedAt = Date.now();
    const events = await claimBatch(this.#db, {
      token,
      limit: this.#options.batchSize,
      leaseMs: this.#options.leaseMs,
    });
    if (events.length === 0) return 0;
    this.stats.batches++;
    const takenOver = events.filter((e) => e.takenOver).length;
    if (takenOver > 0) this.#options.metrics?.leaseTakeovers.inc({ kind: 'outbox' }, takenOver);
    // No delivery starts in the last fifth of the lease, and every delivery is cut off when a tenth
    // is left, so the batch is settled while the claim still holds (a late mark would be rejected,
    // and a delivery past the lease may race the next owner's).
    const deadline = claimedAt + this.#options.leaseMs * 0.8;
    const cutoff = claimedAt + this.#options.leaseMs * 0.9;
    const outcomes = await this.#deliver(events, deadline, cutoff);
    await this.#settle(token, outcomes);
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

  /** Delivers a batch: aggregates in parallel (bounded), each aggregate's events in `seq` order. */
  async #deliver(events: ClaimedEvent[], deadline: number, cutoff: number): Promise<Outcome[]> {
    const groups = new Map<string, ClaimedEvent[]>();
    for (const e of events) {
      const key = `${e.aggregateType}\u0000${e.aggregateId}`;
      groups.set(key, [...(groups.get(key) ?? []), e]);
    }
    const queue = [...groups.values()];
    const outcomes: Outcome[] = [];
    const worker = async () => {
      for (let group = queue.shift(); group; group = queue.shift()) {
        outcomes.push(...(await this.#deliverGroup(group, deadline, cutoff)));
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#options.concurrency, queue.length) }, worker));
    return outcomes;
  }

  async #deliverGroup(group: ClaimedEvent[], deadline: number, cutoff: number): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    let blocked = false;
    for (const event of group) {
      // After a failure the rest of the aggregate waits (order); when stopping or short of lease,
      // nothing new starts. Either way the event goes back unclaimed, its attempts untouched.
      if (blocked || this.#stopping.signal.aborted || Date.now() >= deadline) {
        outcomes.push({ kind: 'released', id: event.id });
        continue;
      }
      const outcome = await this.#deliverOne(event, cutoff);
      outcomes.push(outcome);
      if (outcome.kind !== 'delivered') blocked = true;
    }
    return outcomes;
  }

  async #deliverOne(event: ClaimedEvent, cutoff: number): Promise<Outcome> {
    const sinkName = sinkFor(this.#options.routes, event.topic);
    const sink = sinkName && this.#sinks.get(sinkName);
    try {
      if (!sink) {
        throw failure('InvalidInput', 'NO_ROUTE', `no sink is configured for topic '${event.topic}'`);
      }
      const result = await sink.publish(
        {
          id: event.id,
          seq: event.seq,
          topic: event.topic,
          aggregateType: event.aggregateType,
          aggregateId: event.aggregateId,
          payload: event.payload,
          createdAt: event.createdAt,
        },
        // A sink slower than what is left of the lease fails with Timeout (retried later).
        AbortSignal.any([this.#abort.signal, AbortSignal.timeout(Math.max(1, cutoff - Date.now()))]),
      );
      crashPoint(this.#options.crashPoint, 'publisher-after-ack');
      return {
        kind: 'delivered',
        id: event.id,
        result,
        sink: sinkName ?? 'none',
        createdAt: event.createdAt,
      };
    } catch (err) {
      // Aborted by our own stop: not the sink's fault, not an attempt.
      if (this.#abort.signal.aborted) return { kind: 'released', id: event.id };
      return { kind: 'failed', failure: this.#failureOf(event, err, sinkName ?? 'none') };
    }
  }

  #failureOf(event: ClaimedEvent, err: unknown, sink: string): FailedDelivery {
    const classified = classify(err, `deliver ${event.topic} to ${sink}`);
    const f =
      classified instanceof ApplicationFailure
        ? classified
        : failure('Internal', 'UNCLASSIFIED', `deliver ${event.topic} to ${sink}: unexpected error`);
    const attempt = event.attempts + 1;
    const decision = nextRetry({
      attempt,
      backoff: this.#options.backoff,
      retryAfterMs: detailsOf(f)?.retryAfterMs,
      nowMs: Date.now(),
    });
    return {
      id: event.id,
      errorType: f.type ?? 'Internal',
      message: redactUrlsIn(f.message).slice(0, 500),
      retryInMs: 'retryInMs' in decision ? decision.retryInMs : 0,
      permanent: f.nonRetryable === true,
      sink,
    };
  }

  /**
   * Writes the batch's outcomes, each write fenced by `token`. Retries database errors for up to
   * the lease: giving up is safe (the lease expires and the events are delivered again), but costs
   * duplicates, so it is worth a few tries.
   */
  async #settle(token: string, outcomes: Outcome[]): Promise<void> {
    const delivered = outcomes.flatMap((o) => (o.kind === 'delivered' ? [o] : []));
    const released = outcomes.flatMap((o) => (o.kind === 'released' ? [o.id] : []));
    const failed = outcomes.flatMap((o) => (o.kind === 'failed' ? [o.failure] : []));

    const marked = await this.#withDbRetry('mark published', () => markPublished(this.#db, token, delivered));
    if (marked) {
      this.stats.published += marked.size;
      const metrics = this.#options.metrics;
      const now = Date.now();
      for (const d of delivered) {
        if (!metrics || !marked.has(d.id)) continue;
        metrics.outboxPublished.inc({ sink: d.sink });
        metrics.relayLag.observe((now - d.createdAt.getTime()) / 1000);
      }
      const lost = delivered.length - marked.size;
      if (lost > 0) {
        this.stats.lostClaims += lost;
        this.#log.warn({ lost }, 'delivered events were taken over by another publisher (lease expired)');
      }
    }
    for (const f of failed) {
      const status = await this.#withDbRetry('mark failed', () =>
        markFailed(this.#db, token, f, this.#options.maxAttempts),
      );
      if (status === undefined) {
        this.stats.lostClaims++;
      } else if (status === 'dead') {
        this.stats.dead++;
        this.#options.metrics?.outboxFailed.inc({ sink: f.sink ?? 'none', error_type: f.errorType });
        this.#options.metrics?.outboxDead.inc({ sink: f.sink ?? 'none' });
        this.#log.error(
          { eventId: f.id, errorType: f.errorType, error: f.message },
          'outbox event is dead: list with `durable-fetch outbox dead list`, requeue once fixed',
        );
      } else if (status === 'pending') {
        this.stats.failed++;
        this.#options.metrics?.outboxFailed.inc({ sink: f.sink ?? 'none', error_type: f.errorType });
        this.#log.warn(
          { eventId: f.id, errorType: f.errorType, error: f.message, retryInMs: f.retryInMs },
          'outbox delivery failed; will retry',
        );
      }
    }
    const releasedCount = await this.#withDbRetry('release', () => release(this.#db, token, released));
    if (releasedCount !== undefined) {
      this.stats.released += releasedCount;
      this.stats.lostClaims += released.length - releasedCount;
    }
  }

  async #withDbRetry<T>(what: string, write: () => Promise<T>): Promise<T | undefined> {
    const until = Date.now() + this.#options.leaseMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (err) {
        this.stats.databaseErrors++;
        if (Date.now() >= until || this.#abort.signal.aborted) {
          this.#log.error({ err: safeError(err) }, `outbox ${what} failed; the lease will expire instead`);
          return undefined;
        }
        await sleep(fullJitterMs(attempt, DB_RETRY) + 50);
      }
    }
  }
}

/** Every delivery in flight listens to this one signal: lift Node's 10-listener warning. */
function abortController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

/** An error as logs may carry it: type and redacted message, no stack of query parameters. */
function safeError(err: unknown): { type: string; message: string } {
  const e = err instanceof Error ? err : new Error(String(err));
  return { type: e.name, message: redactUrlsIn(e.message).slice(0, 300) };
}
