import type { Command } from 'commander';
import { UserFacingError } from '../../../runtime/errors.ts';
import type { CliContext } from '../../context.ts';
import type { Finding, ReconcileReport, RunReport } from '../../../client/reconcile/index.ts';
import { parseJobType, printJson } from '../output.ts';
import { reconcileStuck, STUCK_HELP } from './stuck.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = async () => {
  const [m0, m1, m2] = await Promise.all([
    import('../../../activities/http.ts'),
    import('../../../activities/create-deps.ts'),
    import('../../../client/reconcile/index.ts'),
  ]);
  return { ...m0, ...m1, ...m2 };
};

const RECONCILE_HELP = `
Compares, per run, what the database holds with itself and with the partner, and lists every
mismatch (exit code 1 when there is any, 0 otherwise):
  database   records_stored and pages_stored against the run's fetch.page_stored events, every
             record those events list has its fetched_record row (and no row of the run is
             unlisted), no record in two page events, a fetch.run_completed event exactly when the
             run succeeded, no dead outbox event (pending ones are only noted);
  partner    (succeeded runs) every record id the partner serves for the source and date against
             the ids the run stored: missing at our side, extra at our side;
  ledger     each compensation row against the partner's submissions under its reference:
             confirmed = live (and confirmed, for a succeeded run), compensated = voided,
             not_applied = nothing live, attempting/unknown/compensating/needs_manual = unsettled;
             a stray = voided (STRAY_NOT_VOIDED until then); a succeeded run of a source that
             submits its summary has a confirmed submission.
Runs still queued, running or waiting to retry are checked against the database only.
A partner that cannot be read is a mismatch (PARTNER_UNREACHABLE). Credentials are read from the
source's DF_SECRET_* variable, as the worker does. One thing is written: a live submission under an
action's reference that the ledger does not know (EXTRA_LIVE_SUBMISSION) is recorded as a stray of
that action, which the workers' sweep then voids; nothing else is changed anywhere.`;

/** Runs above which progress goes to stderr. */
const PROGRESS_ABOVE = 10;

const plural = (n: number, word: string, many = `${word}s`) => `${n} ${n === 1 ? word : many}`;

function shown(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Findings whose message already says everything their expected/actual values would. */
const MESSAGE_ONLY: ReadonlySet<string> = new Set(['PARTNER_UNREACHABLE', 'OUTBOX_PENDING', 'IN_PROGRESS']);

function findingLine(f: Finding, mark: string): string {
  const values =
    MESSAGE_ONLY.has(f.code) || (f.expected === undefined && f.actual === undefined)
      ? ''
      : ` (expected ${shown(f.expected ?? '-')}, actual ${shown(f.actual ?? '-')})`;
  return `    ${mark} ${f.code}: ${f.message}${values}`;
}

function runLines(r: RunReport): string[] {
  const mark = r.mismatches.length > 0 ? '✗' : '✓';
  return [
    `${mark} ${r.sourceId}/${r.businessDate} ${r.status}: ${plural(r.records, 'record')}, ${plural(r.pages, 'page')}, ` +
      `${plural(r.events, 'event')}, ${plural(r.compensations, 'compensation')}`,
    ...r.mismatches.map((f) => findingLine(f, '✗')),
    ...r.notes.map((f) => findingLine(f, '·')),
  ];
}

/** Prints the human report: one block per run, then the summary line. */
function printReport(report: ReconcileReport): void {
  for (const run of report.runs) for (const line of runLines(run)) console.log(line);
  console.log(`${plural(report.runs.length, 'run')}, ${plural(report.mismatches, 'mismatch', 'mismatches')}`);
}

/** `durable-fetch reconcile <runId> | --date <d> [--source] [--job] | --stuck`. */
export function registerReconcile(program: Command, ctx: () => CliContext): void {
  program
    .command('reconcile')
    .description(
      'compare runs with their records, outbox events, compensations and the partner; list every mismatch (exit 1 when any); --stuck: settle runs whose workflow closed while the row says running',
    )
    .argument('[runId]', 'one run: FetchRun id, workflow id or <source>/<date>')
    .option('--date <YYYY-MM-DD>', 'every run of this business date')
    .option('--source <id>', 'with --date: only this source')
    .option('--job <type>', 'with --date: only runs of this job type, e.g. exchange-rates', parseJobType)
    .option('--stuck', 'settle stuck runs: still running, lease run out, workflow closed or gone (see below)')
    .option('--json', 'print the report as JSON (still exits 1 on mismatches)')
    .addHelpText('after', RECONCILE_HELP + STUCK_HELP)
    .action(
      async (
        runId: string | undefined,
        opts: { date?: string; source?: string; job?: string; stuck?: boolean; json?: boolean },
      ) => {
        const selectors = [runId !== undefined, opts.date !== undefined, opts.stuck === true];
        if (selectors.filter(Boolean).length !== 1) {
          throw new UserFacingError(
            'reconcile: give exactly one of <runId>, --date or --stuck',
            'INVALID_INPUT',
          );
        }
        if (opts.date === undefined && opts.source !== undefined) {
          throw new UserFacingError('reconcile: --source goes with --date only', 'INVALID_INPUT');
        }
        if (opts.date === undefined && opts.job !== undefined) {
          throw new UserFacingError('reconcile: --job goes with --date only', 'INVALID_INPUT');
        }
        const c = ctx();
        if (opts.stuck) return reconcileStuck(c, opts.json === true);
        const prisma = await c.prisma();
        const m = await impl();
        const http = m.createHttpClient(c.config.http);
        let report: ReconcileReport;
        try {
          report = await m.reconcileRuns(
            {
              prisma,
              http,
              secret: (ref) => (m.isSecretRef(ref) ? process.env[ref] : undefined),
              pageLimit: c.config.partner.pageLimit,
            },
            {
              ...(runId === undefined ? {} : { runId }),
              ...(opts.date !== undefined ? { date: opts.date } : {}),
              ...(opts.source === undefined ? {} : { sourceId: opts.source }),
              ...(opts.job === undefined ? {} : { jobType: opts.job }),
            },
            {
              onProgress: (done, total) => {
                if (total > PROGRESS_ABOVE && (done % PROGRESS_ABOVE === 0 || done === total)) {
                  process.stderr.write(`checked ${done}/${total}\n`);
                }
              },
            },
          );
        } finally {
          await http.close();
        }
        if (opts.json) printJson(report);
        else printReport(report);
        // Printed in full first; the one-line error then makes the exit code 1 (cli/main.ts main).
        if (report.mismatches > 0) {
          throw new UserFacingError(
            plural(report.mismatches, 'mismatch', 'mismatches'),
            'RECONCILE_MISMATCH',
          );
        }
      },
    );
}
