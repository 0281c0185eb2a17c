/**
 * The worker's shutdown, for a partner call that runs as a local activity (a source with
 * `localFetch`: its page fetches, and its downstream's confirm). The SDK cancels a regular
 * activity once the worker's shutdown grace time is over, but waits for a running local activity
 * to end by itself: a local fetch held by a slow partner would keep a stopping worker alive for up
 * to its attempt's timeout (two minutes), past any grace time. So the worker aborts a signal of
 * its own when the grace time is over (`deps.stopping`), and a local fetch's partner calls stop
 * with it, failing the attempt with a retryable WorkerShutdown whose delay is longer than the
 * local retry threshold: the SDK then records the attempt and starts a durable timer, the workflow
 * task completes, the worker stops, and whichever worker takes up the run when the timer fires
 * fetches the page again from what is staged.
 */
import { ApplicationFailure, CancelledFailure, type Context } from '@temporalio/activity';
import { LOCAL_FETCH_RETRY_THRESHOLD_MS } from '../../contract/retry-presets.ts';

/** The type of {@link localFetchStopped}. */
const WORKER_SHUTDOWN = 'WorkerShutdown';

/** The failure a local fetch stopped by its worker's shutdown ends its attempt with. */
export function localFetchStopped(): ApplicationFailure {
  return ApplicationFailure.create({
    type: WORKER_SHUTDOWN,
    message: 'the worker stopped during a local partner call: it is made again after a timer',
    nextRetryDelay: LOCAL_FETCH_RETRY_THRESHOLD_MS + 1_000,
  });
}

/**
 * The signal a fetch's partner calls stop on: the activity's cancellation, and for a local
 * activity also `stopping` (aborted by the worker, with {@link localFetchStopped} as its reason).
 * Call `release` when the fetch ends. (Not `AbortSignal.any`: in Node 20 each call leaves an
 * entry on the process-long `stopping` signal, a leak of one per fetch.)
 */
export function partnerCallSignal(
  ctx: Context,
  stopping: AbortSignal | undefined,
): { signal: AbortSignal; release: () => void } {
  const cancelled = ctx.cancellationSignal;
  if (!ctx.info.isLocal || stopping === undefined) return { signal: cancelled, release: () => undefined };
  const own = new AbortController();
  const onCancel = () => own.abort(cancelled.reason);
  const onStop = () => own.abort(stopping.reason);
  const release = () => {
    cancelled.removeEventListener('abort', onCancel);
    stopping.removeEventListener('abort', onStop);
  };
  if (cancelled.aborted) onCancel();
  else if (stopping.aborted) onStop();
  else {
    cancelled.addEventListener('abort', onCancel, { once: true });
    stopping.addEventListener('abort', onStop, { once: true });
  }
  return { signal: own.signal, release };
}

/**
 * True when a partner call ended because our side stopped it (the activity was cancelled, or its
 * worker stopped), not because the partner answered or failed: it says nothing of the partner's
 * health, for its breaker or its metrics.
 */
export function stoppedByUs(err: unknown): boolean {
  return (
    err instanceof CancelledFailure || (err instanceof ApplicationFailure && err.type === WORKER_SHUTDOWN)
  );
}
