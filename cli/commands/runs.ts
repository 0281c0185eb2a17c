import { type Command, InvalidArgumentError } from 'commander';
import { UserFacingError } from '../../runtime/errors.ts';
import type { CliContext } from '../context.ts';
import { duration, table, windowText, workflowUrl } from '../../client/format.ts';
import { RunStatus } from '../../prisma/generated/enums.ts';
import { cancelRun, type FetchRun, formatDate, getRun, listRuns } from '../../client/runs.ts';
import { parseJobType, parseLimit, printJson } from './output.ts';

const STATUSES: string[] = Object.values(RunStatus);

function parseStatus(value: string): RunStatus {
  if (!STATUSES.includes(value)) throw new InvalidArgumentError(`expected one of ${STATUSES.join(', ')}`);
  return value as RunStatus;
}

/** When a run in `retry_wait` makes its step's next attempt (R1), as `HH:MM:SSZ`; '' otherwise. */
const retryAt = (run: FetchRun) =>
  run.status === 'retry_wait' && run.nextRunAt ? `${run.nextRunAt.toISOString().slice(11, 19)}Z` : '';

function row(run: FetchRun): Record<string, string> {
  return {
    id: run.id,
    job: run.jobType,
    source: run.sourceId,
    date: formatDate(run.businessDate),
    status: run.status,
    'retry at': retryAt(run),
    attempt: String(run.attempt),
    pages: String(run.pagesStored),
    records: String(run.recordsStored),
    updated: run.updatedAt.toISOString(),
  };
}

/** `2026-12-01T19:30:05.000Z (in 4.2s)`, or `… (due 1.0s ago)`; '' without a next attempt. */
function nextAttempt(run: FetchRun, now: Date): string {
  if (run.status !== 'retry_wait' || !run.nextRunAt) return '';
  const ms = run.nextRunAt.getTime() - now.getTime();
  return `${run.nextRunAt.toISOString()} (${ms >= 0 ? `in ${duration(ms)}` : `due ${duration(-ms)} ago`})`;
}

/** `durable-fetch runs list|show|cancel` */
export function registerRuns(program: Command, ctx: () => CliContext): void {
  const runs = program.command('runs').description('list and inspect runs (FetchRun records in PostgreSQL)');
  runs
    .command('list')
    .description(
      'list runs, newest business date first; RETRY AT is when a run in retry_wait makes its next attempt',
    )
    .option('--job <type>', 'only runs of this job type, e.g. fetch-records or exchange-rates', parseJobType)
    .option('--source <id>', 'only this source')
    .option('--status <status>', `only this status (${STATUSES.join('|')})`, parseStatus)
    .option('--limit <n>', 'at most n runs (default 50)', parseLimit)
    .option('--json', 'print JSON')
    .action(
      async (opts: { job?: string; source?: string; status?: RunStatus; limit?: number; json?: boolean }) => {
        const sql = await ctx().sql();
        const list = await listRuns(
          { sql },
          { jobType: opts.job, sourceId: opts.source, status: opts.status, limit: opts.limit },
        );
        if (opts.json) return printJson(list);
        if (list.length === 0) return console.log('no runs');
        console.log(
          table(list.map(row), [
            'id',
            'job',
            'source',
            'date',
            'status',
            'retry at',
            'attempt',
            'pages',
            'records',
            'updated',
          ]),
        );
      },
    );
  runs
    .command('show')
    .description('show one run: by FetchRun id, workflow id, or <source>/<date>')
    .argument('<id>')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const c = ctx();
      const run = await getRun({ prisma: await c.prisma() }, id);
      if (!run) throw new UserFacingError(`no run '${id}'`, 'NOT_FOUND');
      if (opts.json) return printJson(run);
      const { isLiveStatus } = await import('../../contract/states.ts');
      const ui = c.config.temporal.uiUrl;
      const fields: [string, string][] = [
        // The show has the full time of the next attempt below.
        ...Object.entries(row(run)).filter(([k]) => k !== 'retry at'),
        ['workflow', run.workflowId],
        ['temporal run', run.workflowRunId ?? ''],
        ['idempotency key', run.idempotencyKey],
        ['correlation id', run.correlationId],
        ['scheduled', run.scheduledAt.toISOString()],
        ['started', run.startedAt?.toISOString() ?? ''],
        ['finished', run.finishedAt?.toISOString() ?? ''],
        ['lease until', run.leaseUntil?.toISOString() ?? ''],
        // An incremental source's run: the window it reads and the highest value it stored.
        ...(run.windowHead === null || run.windowSince === null
          ? []
          : ([
              [
                'window',
                windowText({ since: run.windowSince, until: run.windowUntil, head: run.windowHead }),
              ],
              ['highest stored', run.watermarkSeen ?? 'none yet'],
            ] as [string, string][])),
        ['next attempt', nextAttempt(run, new Date())],
        [
          // A live run's error is its last failed attempt's; an ended run's is why it ended.
          isLiveStatus(run.status) ? 'last error' : 'error',
          run.errorClass ? `${run.errorClass}: ${run.errorMessage ?? ''}` : '',
        ],
        ['web ui', ui ? workflowUrl(ui, c.config.temporal.namespace, run.workflowId) : ''],
      ];
      const width = Math.max(...fields.map(([k]) => k.length));
      for (const [k, v] of fields) console.log(`${k.padEnd(width)}  ${v}`);
    });
  runs
    .command('cancel')
    .description(
      'request cancellation of a run (as the Web UI does): it stops at its next safe point and ends cancelled',
    )
    .argument('<id>', 'FetchRun id, workflow id or <source>/<date>')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const c = ctx();
      const outcome = await cancelRun({ prisma: await c.prisma(), temporal: await c.temporal() }, id);
      if (!outcome) throw new UserFacingError(`no run '${id}'`, 'NOT_FOUND');
      if (opts.json) return printJson({ workflowId: outcome.run.workflowId, requested: outcome.requested });
      console.log(
        outcome.requested
          ? `cancellation requested for ${outcome.run.workflowId}`
          : `${outcome.run.workflowId} already ended (${outcome.run.status}); nothing to cancel`,
      );
    });
}
