/**
 * The gauge of orphaned downstream actions (db/ledger/orphaned-actions.ts): ledger rows that still need
 * settling while their run has no live owner, as a terminated workflow leaves them. Part of
 * {@link createMetrics}'s registry (runtime/metrics/metrics.ts); its name is a contract of ops/alerts.yml.
 */
import { Gauge, type Registry } from 'prom-client';

/** The orphan gauge, registered in `registers`. */
export function orphanMetrics(registers: Registry[]) {
  return {
    orphanedActions: new Gauge({
      name: 'durable_fetch_orphaned_actions',
      help: 'Downstream actions unsettled (attempting, unknown, compensating, or confirmed of a run that did not succeed) whose run has no live owner: its lease ran out, or it ended and no compensation is at work.',
      registers,
    }),
  };
}
