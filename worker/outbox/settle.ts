/**
 * Writing a batch's outcomes (R5, R1): published, failed (retry later or `dead`) and released,
 * each write fenced by the claim's token, with the publisher's totals, metrics and logs. A write
 * that fails on the database is retried for up to the lease: giving up is safe (the lease expires
 * and the events are delivered again), but costs duplicates, so it is worth a few tries.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Backoff, fullJitterMs } from '../../activities/retry/delay.ts';
import { markFailed, markPublished, release } from '../../db/outbox/outbox.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import type { Logger } from '../../runtime/logger.ts';
import { errorTypeLabel, type Metrics } from '../../runtime/metrics/metrics.ts';
import { redactUrlsIn } from '../../runtime/redact.ts';
import type { Outcome } from './deliver.ts';

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

export interface SettleContext {
  db: PrismaClient;
  stats: PublisherStats;
  log: Logger;
  metrics?: Metrics | undefined;
  maxAttempts: number;
  leaseMs: number;
  /** Set when the grace time is over: no more retries of a failed write. */
  abort: AbortSignal;
}

export const DB_RETRY: Backoff = { initialMs: 100, coefficient: 2, maximumMs: 5_000 };

/** Writes the batch's outcomes under `token`; never throws (a write given up on is logged). */
export async function settleBatch(ctx: SettleContext, token: string, outcomes: Outcome[]): Promise<void> {
  const { stats, metrics, log } = ctx;
  const delivered = outcomes.flatMap((o) => (o.kind === 'delivered' ? [o] : []));
  const released = outcomes.flatMap((o) => (o.kind === 'released' ? [o.id] : []));
  const failed = outcomes.flatMap((o) => (o.kind === 'failed' ? [o.failure] : []));

  const marked = await withDbRetry(ctx, 'mark published', () => markPublished(ctx.db, token, delivered));
  if (marked) {
    stats.published += marked.size;
    const now = Date.now();
    for (const d of delivered) {
      if (!metrics || !marked.has(d.id)) continue;
      metrics.outboxPublished.inc({ sink: d.sink });
      metrics.relayLag.observe((now - d.createdAt.getTime()) / 1000);
    }
    const lost = delivered.length - marked.size;
    if (lost > 0) {
      stats.lostClaims += lost;
      log.warn({ lost }, 'delivered events were taken over by another publisher (lease expired)');
    }
  }
  for (const f of failed) {
    const status = await withDbRetry(ctx, 'mark failed', () => markFailed(ctx.db, token, f, ctx.maxAttempts));
    if (status === undefined) {
      stats.lostClaims++;
    } else if (status === 'dead') {
      stats.dead++;
      metrics?.outboxFailed.inc({ sink: f.sink ?? 'none', error_type: errorTypeLabel(f.errorType) });
      metrics?.outboxDead.inc({ sink: f.sink ?? 'none' });
      log.error(
        { eventId: f.id, errorType: f.errorType, error: f.message },
        'outbox event is dead: list with `durable-fetch outbox dead list`, requeue once fixed',
      );
    } else if (status === 'pending') {
      stats.failed++;
      metrics?.outboxFailed.inc({ sink: f.sink ?? 'none', error_type: errorTypeLabel(f.errorType) });
      log.warn(
        { eventId: f.id, errorType: f.errorType, error: f.message, retryInMs: f.retryInMs },
        'outbox delivery failed; will retry',
      );
    }
  }
  const releasedCount = await withDbRetry(ctx, 'release', () => release(ctx.db, token, released));
  if (releasedCount !== undefined) {
    stats.released += releasedCount;
    stats.lostClaims += released.length - releasedCount;
  }
}

async function withDbRetry<T>(
  ctx: SettleContext,
  what: string,
  write: () => Promise<T>,
): Promise<T | undefined> {
  const until = Date.now() + ctx.leaseMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      ctx.stats.databaseErrors++;
      if (Date.now() >= until || ctx.abort.aborted) {
        ctx.log.error({ err: safeError(err) }, `outbox ${what} failed; the lease will expire instead`);
        return undefined;
      }
      await sleep(fullJitterMs(attempt, DB_RETRY) + 50);
    }
  }
}

/** An error as logs may carry it: type and redacted message, no stack of query parameters. */
export function safeError(err: unknown): { type: string; message: string } {
  const e = err instanceof Error ? err : new Error(String(err));
  return { type: e.name, message: redactUrlsIn(e.message).slice(0, 300) };
}
