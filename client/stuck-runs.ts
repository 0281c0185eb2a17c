/**
 * The stuck-run sweep: defence in depth for runs whose workflow closed without settling their
 * `fetch_run` row (a database outage while it recorded its end, a bug, an operator's Terminate in
 * the Web UI). Such a row says `running` forever: no dead letter, no compensation. The sweep finds
 * it (client/stuck-runs/find.ts), asks Temporal how the workflow really ended, and settles the row
 * through the normal path (client/stuck-runs/sweep.ts). This module is what the rest of the
 * project imports.
 */
export { findStuckRuns, type StuckRun, type StuckRunsContext, type UncheckedRun } from './stuck-runs/find.ts';
export {
  RUN_TARGET,
  SETTLE_STUCK_ACTION,
  sweepStuckRuns,
  type SweepContext,
  type SweepReport,
  type SweptRun,
} from './stuck-runs/sweep.ts';
