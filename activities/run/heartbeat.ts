/**
 * Heartbeats on a timer, not only between steps: a request that hangs must still keep its
 * activity alive and, above all, let a cancellation reach it (Temporal delivers it in the reply to
 * a heartbeat), which then aborts the request through the activity's cancellation signal (R9).
 *
 * A local activity has no heartbeat: its cancellation reaches it from the worker itself, and the
 * SDK's core logs a warning for every heartbeat one sends. So none is sent from a local activity.
 */
import type { Context } from '@temporalio/activity';

/**
 * Starts heartbeating `details()` every third of the heartbeat timeout (at most every second).
 * Returns the function that stops it; call it in a `finally`.
 */
export function heartbeatEvery(ctx: Context, details: () => unknown = () => undefined): () => void {
  if (ctx.info.isLocal) return () => undefined;
  const timer = setInterval(
    () => ctx.heartbeat(details()),
    Math.min(1000, (ctx.info.heartbeatTimeoutMs ?? 30_000) / 3),
  );
  return () => clearInterval(timer);
}

/** Heartbeats `details` now, unless the activity is a local one (which has no heartbeat). */
export function heartbeatNow(ctx: Context, details: unknown): void {
  if (!ctx.info.isLocal) ctx.heartbeat(details);
}
