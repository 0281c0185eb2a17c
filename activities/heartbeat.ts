/**
 * Heartbeats on a timer, not only between steps: a request that hangs must still keep its
 * activity alive and, above all, let a cancellation reach it (Temporal delivers it in the reply to
 * a heartbeat), which then aborts the request through the activity's cancellation signal (R9).
 */
import type { Context } from '@temporalio/activity';

/**
 * Starts heartbeating `details()` every third of the heartbeat timeout (at most every second).
 * Returns the function that stops it; call it in a `finally`.
 */
export function heartbeatEvery(ctx: Context, details: () => unknown = () => undefined): () => void {
  const timer = setInterval(
    () => ctx.heartbeat(details()),
    Math.min(1000, (ctx.info.heartbeatTimeoutMs ?? 30_000) / 3),
  );
  return () => clearInterval(timer);
}
