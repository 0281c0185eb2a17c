/**
 * `durable-fetch reconcile --stuck`: one stuck-run sweep now (worker/sweeps/stuck-runs.ts), printing each
 * stuck run found and what was done. Exit 1 while anything is left stuck.
 */
import { UserFacingError } from '../../../runtime/errors.ts';
import { defaultActor } from '../../../client/audit.ts';
import type { CliContext } from '../../context.ts';
import type { OwedCompensation } from '../../../worker/sweeps/owed-compensations.ts';
import type { SweepReport, SweptRun } from '../../../worker/sweeps/stuck-runs.ts';
import { printJson } from '../output.ts';

export const STUCK_HELP = `
With --stuck it settles stuck runs instead: rows still 'running' or 'retry_wait' whose lease has
run out (DURABLE_FETCH_LEASE_TTL_MS) while the latest execution of their workflow is closed or gone (a
database outage while the run recorded its end, a Terminate in the Web UI). Each is recorded as its
workflow really ended — failed: its error; terminated: Internal/WORKFLOW_TERMINATED with the reason;
timed out: DeadlineExceeded/WORKFLOW_TIMED_OUT; cancelled: cancelled; completed or gone: Internal —
with a dead letter and an audit entry (run.settle_stuck), and the compensation of its downstream
effects is started. Runs whose workflow is still open are not touched. Then it starts every
compensation owed and not running: strays (submissions at the partner the ledger did not expect,
voided whatever their run's outcome) and actions of failed runs whose compensation never started.
Workers do the same every DURABLE_FETCH_SWEEP_INTERVAL_MS. Exit 0 when nothing is left stuck and
every owed compensation runs, 1 otherwise.`;

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function compensationText(run: SweptRun): string {
  const c = run.compensation;
  if (!c) return '';
  const how = {
    started: 'started',
    already_running: 'already running',
    failed: 'NOT started (durable-fetch compensations retry)',
  }[c.started];
  return `; compensation ${c.workflowId} ${how}`;
}

function runLine(run: SweptRun): string {
  const what = `${run.sourceId}/${run.businessDate} (run ${run.fetchRunId}, ${run.workflowId})`;
  if (run.outcome === 'failed')
    return `✗ ${what}: ${run.settlement.reason}; could not settle: ${run.error ?? ''}`;
  if (run.outcome === 'changed') return `· ${what}: ${run.settlement.reason}; changed meanwhile, left alone`;
  const letter = run.deadLetterId ? ` (dead letter ${run.deadLetterId})` : '';
  return `✓ ${what}: ${run.settlement.reason} → ${run.settlement.status}${letter}${compensationText(run)}`;
}

function owedLine(o: OwedCompensation): string {
  const what = `${o.sourceId}/${o.businessDate} round ${o.round}: ${plural(o.actions, 'action')} owed (${plural(o.strays, 'stray')})`;
  if (o.started === 'failed') return `✗ ${what}; compensation ${o.workflowId} NOT started: ${o.error ?? ''}`;
  return `✓ ${what}; compensation ${o.workflowId} ${o.started === 'started' ? 'started' : 'already running'}`;
}

function printSweep(report: SweepReport & { owed: OwedCompensation[] }): void {
  for (const run of report.runs) console.log(runLine(run));
  for (const u of report.unchecked)
    console.log(`? run ${u.fetchRunId} (${u.workflowId}): could not ask Temporal: ${u.error}`);
  const settled = report.runs.filter((r) => r.outcome === 'settled').length;
  for (const o of report.owed) console.log(owedLine(o));
  console.log(
    `${plural(report.runs.length, 'stuck run')} (${settled} settled), ${report.leftStuck} left stuck; ` +
      `${plural(report.checked, 'run')} past their lease checked; ${plural(report.owed.length, 'owed compensation')}`,
  );
}

/** The `--stuck` action. @throws UserFacingError STUCK_RUNS (exit 1) when runs are left stuck. */
export async function reconcileStuck(c: CliContext, json: boolean): Promise<void> {
  const [{ pino }, { createMetrics }, { startOwedCompensations }, { sweepStuckRuns }] = await Promise.all([
    import('pino'),
    import('../../../runtime/metrics/metrics.ts'),
    import('../../../worker/sweeps/owed-compensations.ts'),
    import('../../../worker/sweeps/stuck-runs.ts'),
  ]);
  const ctx = {
    prisma: await c.prisma(),
    temporal: await c.temporal(),
    taskQueue: c.config.temporal.taskQueue,
    // Everything the sweep logs is in the report printed below.
    log: pino({ level: 'silent' }),
  };
  const swept = await sweepStuckRuns({ ...ctx, actor: defaultActor(), metrics: createMetrics() });
  const report = { ...swept, owed: await startOwedCompensations(ctx) };
  if (json) printJson(report);
  else printSweep(report);
  if (report.leftStuck > 0) {
    throw new UserFacingError(`${plural(report.leftStuck, 'run')} left stuck`, 'STUCK_RUNS');
  }
  const unstarted = report.owed.filter((o) => o.started === 'failed').length;
  if (unstarted > 0) {
    throw new UserFacingError(`${plural(unstarted, 'owed compensation')} not started`, 'STUCK_RUNS');
  }
}
