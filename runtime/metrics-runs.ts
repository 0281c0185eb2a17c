/**
 * Run-state gauges (R1, R10), sampled from the database by every worker's health sampler
 * (worker/health.ts). Kept beside runtime/metrics.ts, which spreads them into the registry; the
 * names are part of the same contract (ops/alerts.yml, docs/operations.md).
 */
import { Gauge, type Registry } from 'prom-client';
import { RETRYABLE_ERROR_TYPES } from '../workflows/error-types.ts';

/** The gauges of run states, registered in `registers`. */
export function runStateMetrics(registers: Registry[]) {
  return {
    runsRetryWait: new Gauge({
      name: 'durable_fetch_runs_retry_wait',
      help: 'Runs in retry_wait: a step failed retryably and waits for its next attempt, by the error class of that failure.',
      labelNames: ['error_class'] as const,
      registers,
    }),
  };
}

/**
 * Sets `durable_fetch_runs_retry_wait` from a count per error class: every retryable DESIGN type
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
