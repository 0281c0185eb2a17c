/**
 * Run-state metrics (R1, R10): runs waiting for a step's retry, sampled from the database by every
 * worker's health sampler (client/health.ts), and the stuck runs the sweep finds and settles
 * (worker/sweeps/sweep-loop.ts). Kept beside runtime/metrics/metrics.ts, which spreads them into the
 * registry; the names are part of the same contract (ops/alerts.yml, docs/operations.md).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { RETRYABLE_ERROR_TYPES } from '../../contract/error-types.ts';

/** The metrics of run states (retry waits, stuck runs), registered in `registers`. */
export function runStateMetrics(registers: Registry[]) {
  return {
    runsStuck: new Gauge({
      name: 'durable_fetch_runs_stuck',
      help: 'Runs the last stuck-run sweep found stuck (workflow closed or gone while the row says running or retry_wait) and could not settle, or could not check in Temporal.',
      registers,
    }),
    runsStuckSettled: new Counter({
      name: 'durable_fetch_runs_stuck_settled_total',
      help: 'Stuck runs the sweep settled, by how their workflow had ended (failed, terminated, timed_out, cancelled, completed, gone).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    runsRetryWait: new Gauge({
      name: 'durable_fetch_runs_retry_wait',
      help: 'Runs in retry_wait: a step failed retryably and waits for its next attempt, by the error class of that failure.',
      labelNames: ['error_class'] as const,
      registers,
    }),
  };
}

/**
 * Sets `durable_fetch_runs_retry_wait` from a count per error class: every retryable error type
 * gets its series (0 when none waits, so a class that stops waiting drops to 0 instead of keeping
 * its last value); any other class a job's code threw is summed under `other`.
 */
export function observeRetryWaits(
  metrics: ReturnType<typeof runStateMetrics>,
  byErrorClass: Readonly<Record<string, number>>,
): void {
  const known: readonly string[] = RETRYABLE_ERROR_TYPES;
  let other = 0;
  for (const [errorClass, runs] of Object.entries(byErrorClass))
    if (!known.includes(errorClass)) other += runs;
  for (const errorClass of known)
    metrics.runsRetryWait.set({ error_class: errorClass }, byErrorClass[errorClass] ?? 0);
  metrics.runsRetryWait.set({ error_class: 'other' }, other);
}
