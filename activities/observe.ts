/**
 * Partner calls as metrics (R10 "downstream status"): each call's outcome, and the time
 * of the last success, per source.
 */
import { observeDownstream } from '../runtime/metrics/metrics.ts';
import type { ActivityDeps } from './deps.ts';
import { stoppedByUs } from './pages/local-stop.ts';

/** Resolves or rejects like `call`, counting it ok or error (a call our side stopped is neither). */
export async function observed<T>(
  deps: Pick<ActivityDeps, 'metrics'>,
  source: string,
  call: Promise<T>,
): Promise<T> {
  try {
    const value = await call;
    observeDownstream(deps.metrics, source, true);
    return value;
  } catch (err) {
    if (!stoppedByUs(err)) observeDownstream(deps.metrics, source, false);
    throw err;
  }
}
