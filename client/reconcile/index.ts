/**
 * Reconciling side effects (R11): for each selected run, compares what the database holds — the
 * run row, its business rows, its outbox events, its compensation ledger — with itself and with
 * the partner (its records API and its submissions), and lists every mismatch.
 *
 * The database is read in one REPEATABLE READ snapshot per run (so a run being written meanwhile
 * cannot produce a false mismatch), the partner only with GETs. One write: a live submission the
 * ledger does not know is recorded as a stray, so that it is voided (never left alone). A partner
 * that cannot be read is reported on the run (`PARTNER_UNREACHABLE`), never thrown.
 */
import type { FetchRun } from '../../prisma/generated/client.ts';
import { defaultJobs } from '../../jobs/registry.ts';
import { checkDatabase } from './database-checks.ts';
import { checkActions } from './ledger-checks.ts';
import { PartnerReader } from './partner-reader.ts';
import { checkRecords } from './records-check.ts';
import { selectRuns } from './select.ts';
import { readSnapshot } from './snapshot.ts';
import type { ReconcileContext, ReconcileOptions, ReconcileSelector } from './context.ts';
import type { ReconcileReport, RunReport } from './findings.ts';
import { formatDate, OPEN_RUN_STATUSES } from '../runs.ts';

export { MISMATCH_CODES, NOTE_CODES } from './findings.ts';
export type { ReconcileContext, ReconcileOptions, ReconcileSelector } from './context.ts';
export type { Finding, MismatchCode, NoteCode, ReconcileReport, RunReport } from './findings.ts';

/**
 * Reconciles the selected runs, in source order for a date. Read-only.
 * @throws UserFacingError (INVALID_INPUT) for a selector that is not exactly one of runId/date, a
 *   malformed date or source id; (NOT_FOUND) for an unknown run or source. Database errors pass
 *   through. Partner failures never throw: they are `PARTNER_UNREACHABLE` mismatches.
 */
export async function reconcileRuns(
  ctx: ReconcileContext,
  selector: ReconcileSelector,
  options: ReconcileOptions = {},
): Promise<ReconcileReport> {
  const runs = await selectRuns(ctx, selector);
  const reports: RunReport[] = [];
  for (const run of runs) {
    reports.push(await reconcileRun(ctx, run));
    options.onProgress?.(reports.length, runs.length);
  }
  return { runs: reports, mismatches: reports.reduce((n, r) => n + r.mismatches.length, 0) };
}

async function reconcileRun(ctx: ReconcileContext, selected: FetchRun): Promise<RunReport> {
  const snap = await readSnapshot(ctx.prisma, ctx.jobs ?? defaultJobs(), selected.id);
  const run = snap?.run ?? selected;
  const report: RunReport = {
    runId: run.id,
    workflowId: run.workflowId,
    jobType: run.jobType,
    sourceId: run.sourceId,
    businessDate: formatDate(run.businessDate),
    status: run.status,
    records: run.recordsStored,
    pages: run.pagesStored,
    events: snap?.events.length ?? 0,
    compensations: snap?.actions.length ?? 0,
    partnerRecords: null,
    mismatches: [],
    notes: [],
  };
  if (!snap) return report; // deleted meanwhile: nothing left to compare
  const stored = checkDatabase(snap, report);
  if (OPEN_RUN_STATUSES.includes(run.status)) {
    report.notes.push({
      code: 'IN_PROGRESS',
      message: `run is ${run.status}: not compared with the partner until it ends`,
    });
    return report;
  }
  const partner = new PartnerReader(ctx, snap.source, snap.job);
  if (run.status === 'succeeded' && snap.job?.reconcile && snap.run.windowHead !== null) {
    // The partner's list of a window changes after the run (a record changed since is read, and
    // written, by a later run): no list to compare the run's records with.
    report.notes.push({
      code: 'INCREMENTAL_NOT_COMPARED',
      message:
        "an incremental source's run: its records are not compared with the partner's list (a later window holds their changes)",
    });
  } else if (run.status === 'succeeded' && snap.job?.reconcile) {
    await checkRecords(partner, snap, stored, report);
  }
  await checkActions(ctx, partner, snap, report);
  return report;
}
