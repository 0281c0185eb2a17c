/**
 * The stuck-run sweep as a periodic pass of every worker process (`durable-fetch worker`,
 * `npm start`): every DURABLE_FETCH_SWEEP_INTERVAL_MS it settles runs whose workflow closed
 * without settling their row (client/stuck-runs.ts finds them, worker/sweeps/stuck-runs.ts settles them), sets `durable_fetch_runs_stuck`, and starts
 * the compensations owed and not running — strays above all (worker/sweeps/owed-compensations.ts).
 */
import type { Client } from '@temporalio/client';
import { startOwedCompensations } from './owed-compensations.ts';
import { sweepStuckRuns } from './stuck-runs.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { Metrics } from '../../runtime/metrics/metrics.ts';
import { type Periodic, startPeriodic } from '../../runtime/periodic.ts';

/** The audit trail's actor for runs a worker's sweep settles. */
export const SWEEP_ACTOR = 'system:sweep';

export interface StuckRunSweepOptions {
  prisma: PrismaClient;
  /** Connects on first use; a failure is that pass's failure. */
  temporal: () => Promise<Client>;
  /** The worker's task queue: compensations of runs whose workflow is gone start there. */
  taskQueue: string;
  log: Logger;
  metrics: Metrics;
  /** Time between passes; 0 turns the sweep off. */
  intervalMs: number;
  /** Delay before the first pass. Default: the interval, at most 5 s. */
  initialDelayMs?: number;
}

/**
 * Starts the periodic sweep (jittered, never overlapping; runtime/periodic.ts). Each pass sets the
 * gauge to the runs it left stuck; a pass that fails as a whole (database or Temporal unreachable)
 * is logged (warn), leaves the gauge as it was, and the next pass tries again. `stop()` waits for
 * a pass in progress.
 */
export function startStuckRunSweep(options: StuckRunSweepOptions): Periodic {
  const { intervalMs, log, metrics } = options;
  const pass = async () => {
    try {
      const temporal = await options.temporal();
      const report = await sweepStuckRuns({
        prisma: options.prisma,
        temporal,
        taskQueue: options.taskQueue,
        actor: SWEEP_ACTOR,
        log,
        metrics,
      });
      await startOwedCompensations({ prisma: options.prisma, temporal, taskQueue: options.taskQueue, log });
      metrics.runsStuck.set(report.leftStuck);
      const settled = report.runs.filter((r) => r.outcome === 'settled').length;
      log[settled > 0 || report.leftStuck > 0 ? 'info' : 'debug'](
        { checked: report.checked, settled, leftStuck: report.leftStuck },
        'stuck-run sweep done',
      );
    } catch (err) {
      log.warn({ err }, `stuck-run sweep failed; next attempt in ${intervalMs} ms`);
    }
  };
  return startPeriodic(pass, {
    intervalMs,
    initialDelayMs: options.initialDelayMs ?? Math.min(intervalMs, 5_000),
  });
}
