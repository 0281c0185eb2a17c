// The wait of a `delay` fault, shared by every route: it notices a client leaving meanwhile.
import type { ServerResponse } from 'node:http';
import type { Ledger, LedgerInput } from './ledger.ts';

/** What waiting out a delay needs from the server. */
export interface DelayContext {
  ledger: Ledger;
  /** Resolves true after `ms`, or false as soon as the server closes (timers must not outlive it). */
  delay: (ms: number) => Promise<boolean>;
  /** True once the partner itself is shutting down (its sockets closing are not clients leaving). */
  isClosing: () => boolean;
}

/** How the wait of a `delay` fault ended. */
export interface DelayEnd {
  /** False when the partner closed during the wait. */
  fired: boolean;
  /**
   * Whether the client left during the wait: `stayed`; `dropped` (its 499 `client_closed` entry is
   * recorded); `late` (it left within the late-effect window: nothing is recorded yet, the caller
   * processes the request and records its 499 entry).
   */
  client: 'stayed' | 'dropped' | 'late';
}

/**
 * Waits out a `delay` fault of `ms`. A client that gives up while we hang (a timeout, a cancelled
 * run) is recorded when it leaves, as a 499 `client_closed` entry: tests see the abort reach the
 * partner. With `lateEffectMs` > 0, a client leaving at most that long before the wait ends is
 * left to the caller (`late`), which decides what a late effect is. The caller still completes
 * the work afterwards.
 */
export async function delayFault(
  res: ServerResponse,
  entry: LedgerInput,
  ctx: DelayContext,
  ms: number,
  lateEffectMs = 0,
): Promise<DelayEnd> {
  const endsAt = performance.now() + ms;
  let client: DelayEnd['client'] = 'stayed';
  const onClientGone = () => {
    if (ctx.isClosing() || res.writableEnded) return;
    if (lateEffectMs > 0 && endsAt - performance.now() <= lateEffectMs) {
      client = 'late';
      return;
    }
    client = 'dropped';
    ctx.ledger.record({ ...entry, status: 499, fault: 'client_closed' });
  };
  res.once('close', onClientGone);
  try {
    const fired = await ctx.delay(ms);
    return { fired, client };
  } finally {
    res.off('close', onClientGone);
  }
}
