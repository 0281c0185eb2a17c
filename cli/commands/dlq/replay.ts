import { type Command, InvalidArgumentError } from 'commander';
import { UserFacingError } from '../../../runtime/errors.ts';
import type { CliContext } from '../../context.ts';
import { defaultActor } from '../../../client/audit.ts';
import { parseSince } from '../../../client/dead-letters/since.ts';
import { table, workflowUrl } from '../../../client/format.ts';
import type {
  ReplayFilter,
  ReplayProgress,
  ReplayReport,
  ReplayRequest,
} from '../../../client/dead-letters/replay.ts';
import { parseJobType, printJson } from '../output.ts';
import { DEFAULT_REPLAY_MAX } from '../../../client/dead-letters/replay-defaults.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = () => import('../../../client/dead-letters/replay.ts');

const REPLAY_HELP = `
A replay restarts the runs of open dead letters, under their own business keys, at most --rate
starts per second. It is a durable Temporal workflow (replay/<id>): it goes on if this command
exits or a worker restarts, and never starts a run twice. Stored pages are not fetched again.
It ends with a report: replayed, succeeded, still failing (a new dead letter each), suppressed
(the key was already running or done), and the rows and events the runs created.
Follow or steer it with dlq replay-status|replay-pause|replay-resume|replay-cancel <id>.`;

function parseRate(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    throw new InvalidArgumentError('expected a positive number of starts per second');
  return n;
}

function parseMax(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

interface ReplayOptions {
  job?: string;
  source?: string;
  errorType?: string;
  since?: string;
  rate: number;
  max?: number;
  dryRun?: boolean;
  wait: boolean;
  by?: string;
  json?: boolean;
}

function requestOf(opts: ReplayOptions): ReplayRequest {
  const filter: ReplayFilter = {
    ...(opts.job === undefined ? {} : { jobType: opts.job }),
    ...(opts.source === undefined ? {} : { sourceId: opts.source }),
    ...(opts.errorType === undefined ? {} : { errorType: opts.errorType }),
    ...(opts.since === undefined ? {} : { since: parseSince(opts.since).toISOString() }),
  };
  return {
    filter,
    ratePerSecond: opts.rate,
    ...(opts.max === undefined ? {} : { max: opts.max }),
    actor: opts.by ?? defaultActor(),
  };
}

function progressLine(p: ReplayProgress): string {
  const state = p.paused ? ' (paused)' : '';
  return (
    `replayed ${p.started + p.suppressed}/${p.total} at ${p.observedRate}/s (limit ${p.ratePerSecond}/s)${state}: ` +
    `${p.succeeded} succeeded, ${p.failed} still failing, ${p.suppressed} suppressed`
  );
}

function printReport(r: ReplayReport): void {
  const fields: [string, string | number][] = [
    ['replay', r.replayId],
    ['dead letters', r.total],
    ['replayed', r.replayed],
    ['succeeded', r.succeeded],
    ['still failing', `${r.stillFailing} (new dead letters: ${r.newDeadLetters})`],
    ['suppressed', `${r.suppressed} (already running or done)`],
    ['not started', `${r.notStarted}${r.cancelled ? ' (cancelled; given back, open)' : ''}`],
    ['rows created', r.recordsCreated],
    ['events created', r.eventsCreated],
    ['took', `${((Date.parse(r.finishedAt) - Date.parse(r.startedAt)) / 1000).toFixed(1)} s`],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  for (const [k, v] of fields) console.log(`${k.padEnd(width)}  ${v}`);
}

/** `durable-fetch dlq replay …` and `dlq replay-status|replay-pause|replay-resume|replay-cancel` */
export function registerDlqReplay(dlq: Command, ctx: () => CliContext): void {
  dlq
    .command('replay')
    .description('restart the runs of open dead letters at a limited rate (a durable workflow)')
    .requiredOption('--rate <n>', 'at most n starts per second (fractions allowed, e.g. 0.5)', parseRate)
    .option('--job <type>', 'only dead letters of this job type, e.g. exchange-rates', parseJobType)
    .option('--source <id>', 'only dead letters of this source')
    .option('--error-type <type>', 'only this error type, e.g. InvalidInput')
    .option('--since <when>', 'only dead letters since YYYY-MM-DD, an ISO time, or an age like 6h, 3d')
    .option('--max <n>', `at most n dead letters (default ${DEFAULT_REPLAY_MAX})`, parseMax)
    .option('--dry-run', 'list what would be replayed; start nothing')
    .option('--no-wait', 'start the replay and exit; follow it with dlq replay-status')
    .option('--by <who>', 'who asks (default: the OS user)')
    .option('--json', 'print JSON')
    .addHelpText('after', REPLAY_HELP)
    .action(async (opts: ReplayOptions) => {
      const m = await impl();
      const c = ctx();
      const req = requestOf(opts);
      const prisma = await c.prisma();
      if (opts.dryRun) {
        const targets = await m.previewReplay({ prisma }, req);
        if (opts.json) return printJson({ count: targets.length, ratePerSecond: req.ratePerSecond, targets });
        const seconds = targets.length === 0 ? 0 : (targets.length - 1) / req.ratePerSecond;
        console.log(
          `would replay ${targets.length} dead letters at ≤ ${req.ratePerSecond}/s (starts take about ${seconds.toFixed(1)} s); nothing started`,
        );
        if (targets.length > 0) {
          console.log(
            table(
              targets.map((t) => ({
                'dead letter': t.deadLetterId,
                job: t.jobType ?? '',
                source: t.sourceId,
                date: t.businessDate,
              })),
              ['dead letter', 'job', 'source', 'date'],
            ),
          );
        }
        return;
      }
      const temporal = await c.temporal();
      const started = await m.startReplay({ prisma, temporal, taskQueue: c.config.temporal.taskQueue }, req);
      const ui = c.config.temporal.uiUrl;
      if (!opts.wait) {
        if (opts.json) return printJson(started);
        console.log(`replay ${started.replayId} started (workflow ${started.workflowId})`);
        if (ui) console.log(workflowUrl(ui, c.config.temporal.namespace, started.workflowId));
        return;
      }
      if (!opts.json) {
        console.log(
          `replay ${started.replayId} started at ≤ ${req.ratePerSecond}/s (workflow ${started.workflowId})`,
        );
        if (ui) console.log(workflowUrl(ui, c.config.temporal.namespace, started.workflowId));
      }
      let last = '';
      const report = await m.followReplay({ temporal }, started.replayId, (p) => {
        const line = progressLine(p);
        if (line !== last) process.stderr.write(`${line}\n`);
        last = line;
      });
      if (opts.json) printJson(report);
      else printReport(report);
      if (report.stillFailing > 0) {
        throw new UserFacingError(
          `${report.stillFailing} replayed runs failed again (new dead letters)`,
          'STILL_FAILING',
        );
      }
    });

  dlq
    .command('replay-status')
    .description("a replay's progress while it runs, its report once it ended")
    .argument('<replayId>', 'replay id (or its workflow id replay/<id>)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const m = await impl();
      const state = await m.replayState({ temporal: await ctx().temporal() }, id);
      if (opts.json) return printJson(state);
      if ('progress' in state) return console.log(`running: ${progressLine(state.progress)}`);
      if ('report' in state) return printReport(state.report);
      console.log(`replay ${id} is ${state.status}`);
    });

  for (const action of ['pause', 'resume', 'cancel'] as const) {
    const what = {
      pause: 'pause a running replay: no new starts until resumed (runs already started go on)',
      resume: 'resume a paused replay',
      cancel:
        'cancel a running replay: no new starts, letters not started are given back, the report still comes',
    }[action];
    dlq
      .command(`replay-${action}`)
      .description(what)
      .argument('<replayId>', 'replay id (or its workflow id replay/<id>)')
      .option('--by <who>', 'who asks (default: the OS user)')
      .option('--json', 'print JSON')
      .action(async (id: string, opts: { by?: string; json?: boolean }) => {
        const m = await impl();
        const c = ctx();
        const done = await m.controlReplay(
          { prisma: await c.prisma(), temporal: await c.temporal() },
          id,
          action,
          opts.by ?? defaultActor(),
        );
        if (opts.json) return printJson({ ...done, action });
        console.log(`${action} requested for replay ${done.replayId}`);
      });
  }
}
