/**
 * The metrics of R8's circuit breakers and retry budgets (db/retry/breaker.ts): each downstream's state
 * (sampled from PostgreSQL, so every worker reports the shared state), its transitions and the
 * calls it refused. Part of {@link createMetrics}'s registry (runtime/metrics/metrics.ts); the names are a
 * contract of ops/alerts.yml.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** The breaker states, as the state gauge labels them. */
export const BREAKER_STATES = ['closed', 'open', 'half_open'] as const;

/** The breaker metrics, registered in `registers`. */
export function breakerMetrics(registers: Registry[]) {
  return {
    breakerState: new Gauge({
      name: 'durable_fetch_breaker_state',
      help: "1 for the state each downstream's circuit breaker is in (closed, open, half_open), 0 for the others; forced=true when an operator opened it.",
      labelNames: ['downstream', 'state', 'forced'] as const,
      registers,
    }),
    breakerTransitions: new Counter({
      name: 'durable_fetch_breaker_transitions_total',
      help: 'Circuit breaker state changes this process made, by downstream, from and to.',
      labelNames: ['downstream', 'from', 'to'] as const,
      registers,
    }),
    breakerRefusedCalls: new Counter({
      name: 'durable_fetch_breaker_refused_calls_total',
      help: 'Partner calls not made by this process, by downstream and reason (open, forced_open, trials_busy, retry_budget).',
      labelNames: ['downstream', 'reason'] as const,
      registers,
    }),
    retryBudgetExhausted: new Counter({
      name: 'durable_fetch_retry_budget_exhausted_total',
      help: "Retries held back because their downstream's retry budget was spent, by downstream.",
      labelNames: ['downstream'] as const,
      registers,
    }),
  };
}

/**
 * Sets `durable_fetch_breaker_state` from every downstream's breaker as read now: 1 for its state,
 * 0 for the other two, labelled with whether an operator forced it. The gauge is emptied first
 * (synchronously, so no scrape sees it empty) so that a breaker whose `forced` changed, or a
 * downstream no longer known, leaves no stale series behind.
 */
export function observeBreakers(
  metrics: ReturnType<typeof breakerMetrics>,
  breakers: readonly { downstream: string; state: (typeof BREAKER_STATES)[number]; forced: boolean }[],
): void {
  metrics.breakerState.reset();
  for (const b of breakers) {
    for (const state of BREAKER_STATES) {
      metrics.breakerState.set(
        { downstream: b.downstream, state, forced: String(b.forced) },
        state === b.state ? 1 : 0,
      );
    }
  }
}
