import { type Command, InvalidArgumentError } from 'commander';
import { ORPHAN_QUIET_SECONDS } from '../../db/ledger/orphaned-actions.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import type { CliContext } from '../context.ts';
import { table } from '../../client/format.ts';
import { buildName } from '../../client/status-builds.ts';
import type { Status } from '../../client/status.ts';
import { parseJobType, printJson } from './output.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = async () => {
  const [m0, m1] = await Promise.all([import('../../client/breakers.ts'), import('../../client/status.ts')]);
  return { ...m0, ...m1 };
};
type Impl = Awaited<ReturnType<typeof impl>>;

const STATUS_HELP = `
The queues are the configured task queue's workflow and activity tasks and, for every downstream
isolated in the database now, the activity tasks of its own queue (<task queue>-ds-<downstream>);
--task-queue names the queues instead.
A backlog risk is flagged only when, over the window, the oldest waiting task keeps getting older
(nothing drains the queue) or completion stays below arrival in every sample with tasks waiting —
not on a short spike. The trend comes from the samples every worker takes (DURABLE_FETCH_METRICS_SAMPLE_MS)
plus one taken now; with less than half a window of history it says so.
A stuck run is one still 'running' or 'retry_wait' whose lease has run out while the latest
execution of its workflow is closed or gone: listed, and a problem, until a worker's sweep or
durable-fetch reconcile --stuck settles it.
An orphaned action is a downstream action (ledger row) that still needs settling — attempting,
unknown, compensating, or confirmed for a run that did not succeed — while its run has no live
owner: the row says running with its lease run out (a terminated workflow), or the run ended and
nothing has touched the action for ${ORPHAN_QUIET_SECONDS / 60} minutes (no compensation at work). Any is a problem.
Each worker build polling a queue's workflow tasks gets a line (its Worker Deployment and build
id, docs/versioning.md): during a deploy, the old and the new one. A live worker renews its long
poll about every minute; Temporal lists a stopped one for a few minutes, hence the last poll.
Each downstream's circuit breaker (R8) gets a line: its state (forced: an operator opened it),
since when, why, and its retries against the retry budget's allowance. An open breaker is a
problem (its partner gets no calls, its runs wait), and so is a half-open one (only trial calls go
out): the DurableFetchBreakerOpen alert counts both.
Runs failed for good are judged by what is failed now: open dead letters. A dead letter retried
(to success, or still running), discarded, or closed by a later success of its run needs no
attention from that moment; the runs that failed in the window (and the error rate) are shown as
information, not judged.
--job <type> narrows the run counts, the job and source tables and the open dead letters (also as
a problem for --check) to one job type; queues, outbox, compensations, strays, stuck runs,
orphaned actions and breakers are shared by every job and always shown whole.`;

function parseWindow(value: string): number {
  const m = /^(\d{1,5})(s|m|h)$/.exec(value);
  if (!m) throw new InvalidArgumentError('expected a duration like 90s, 10m or 1h');
  return Number(m[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as 's' | 'm' | 'h'];
}

const age = (seconds: number) =>
  seconds < 120 ? `${seconds.toFixed(0)} s` : `${(seconds / 60).toFixed(1)} min`;

function print(m: Impl, s: Status): void {
  const of = s.jobType === null ? '' : `, job ${s.jobType}`;
  console.log(
    `${s.healthy ? 'healthy' : 'NEEDS ATTENTION'} at ${s.at} (window ${age(s.windowSeconds)}${of})`,
  );
  for (const p of s.problems) console.log(`  ! ${p}`);
  console.log('');
  console.log(
    table(
      s.queues.map((q) => ({
        'task queue': q.taskQueue,
        type: q.type,
        backlog: String(q.backlog),
        'oldest age': age(q.oldestAgeSeconds),
        'arrival/s': q.addRate.toFixed(2),
        'completion/s': q.dispatchRate.toFixed(2),
        trend: q.verdict.risk ? `RISK: ${q.verdict.reason}` : q.verdict.reason,
      })),
      ['task queue', 'type', 'backlog', 'oldest age', 'arrival/s', 'completion/s', 'trend'],
    ),
  );
  for (const b of s.builds) {
    const workers = `${b.pollers} worker${b.pollers === 1 ? '' : 's'}`;
    console.log(
      `build on ${b.taskQueue}: ${buildName(b)} (${workers}, last poll ${age(b.lastPollSecondsAgo)} ago)`,
    );
  }
  console.log('');
  const d = s.database;
  const lettersOpen = s.jobType === null ? d.deadLettersOpen : (s.jobs[0]?.deadLettersOpen ?? 0);
  console.log(
    `runs in window${of}: ${s.runs.started} started, ${s.runs.finished} finished, ${s.runs.retried} taken up again (retries)`,
  );
  const w = s.retryWait;
  const classes = Object.entries(w.byErrorClass).map(([c, n]) => `${c} ${n}`);
  console.log(
    `runs waiting for a retry${of}: ${w.runs}${w.runs === 0 ? '' : ` (${classes.join(', ')}), next attempt due ${w.nextDueAt ?? '?'}`}`,
  );
  console.log(
    `outbox: ${d.outboxPending} pending (${d.outboxRetrying} retrying), oldest ${age(d.outboxOldestPendingAgeSeconds)}, ${d.outboxDead} dead`,
  );
  console.log(
    `dead letters open${of}: ${lettersOpen}; compensations needing a human: ${d.compensationsNeedsManual}; strays not yet voided: ${d.straysUnsettled}`,
  );
  console.log(`downstream actions unsettled with no live run: ${s.orphans.count}`);
  console.log(`OAuth2 credentials needing reauthorization: ${d.credentialsNeedingReauthorization}`);
  if (s.jobs.length > 0) {
    console.log('');
    console.log(
      table(
        s.jobs.map((j) => ({
          job: j.jobType,
          sources: String(j.sources),
          running: String(j.running),
          waiting: String(j.waiting),
          'started in window': String(j.started),
          'finished in window': String(j.finished),
          'failed in window': String(j.failed),
          'dead letters open': String(j.deadLettersOpen),
        })),
        [
          'job',
          'sources',
          'running',
          'waiting',
          'started in window',
          'finished in window',
          'failed in window',
          'dead letters open',
        ],
      ),
    );
  }
  if (s.stuck.runs.length > 0) {
    console.log('');
    console.log(
      table(
        s.stuck.runs.map((r) => ({
          'stuck run': `${r.sourceId}/${r.businessDate}`,
          id: r.fetchRunId,
          workflow: r.workflowId,
          found: r.settlement.reason,
        })),
        ['stuck run', 'id', 'workflow', 'found'],
      ),
    );
  }
  if (s.orphans.runs.length > 0) {
    console.log('');
    console.log(
      table(
        s.orphans.runs.map((r) => ({
          'orphaned actions of': `${r.sourceId}/${r.businessDate}`,
          id: r.fetchRunId,
          'run status': r.status,
          actions: `${r.actions} (${r.states.join(', ')})`,
        })),
        ['orphaned actions of', 'id', 'run status', 'actions'],
      ),
    );
  }
  if (s.breakers.length > 0) {
    console.log('');
    console.log(
      table(
        s.breakers.map((b) => ({
          breaker: b.downstream,
          state: m.stateCell(b),
          since: b.changedAt?.toISOString() ?? '-',
          reason: (b.reason ?? '').replace(/\s+/g, ' '),
          'retry budget': m.budgetCell(b),
        })),
        ['breaker', 'state', 'since', 'reason', 'retry budget'],
      ),
    );
  }
  if (s.sources.length > 0) {
    console.log('');
    console.log(
      table(
        s.sources.map((src) => ({
          source: src.sourceId,
          job: src.jobType,
          paused: src.paused ? 'yes' : 'no',
          'last success': src.lastSuccessAt ?? 'never',
          'finished in window': String(src.finished),
          'failed in window': String(src.failed),
          'error rate': src.errorRate === null ? '-' : `${Math.round(src.errorRate * 100)}%`,
          'dead letters open': String(src.deadLettersOpen),
        })),
        [
          'source',
          'job',
          'paused',
          'last success',
          'finished in window',
          'failed in window',
          'error rate',
          'dead letters open',
        ],
      ),
    );
  }
}

/** `durable-fetch status [--json] [--window 10m] [--task-queue q]… [--job type] [--check]` */
export function registerStatus(program: Command, ctx: () => CliContext): void {
  program
    .command('status')
    .description(
      'is it healthy? backlog and its trend, completion vs arrival, retries, dead letters, outbox lag, compensations, breakers, sources',
    )
    .option('--window <duration>', 'history to judge trends and rates by (default 10m)', parseWindow)
    .option(
      '--task-queue <name...>',
      "task queues to look at, exactly (default: the configured one and its isolated downstreams' queues)",
    )
    .option('--job <type>', 'narrow runs, jobs, sources and dead letters to this job type', parseJobType)
    .option('--check', 'exit 1 when something needs attention (for scripts and cron)')
    .option('--json', 'print JSON')
    .addHelpText('after', STATUS_HELP)
    .action(
      async (opts: {
        window?: number;
        taskQueue?: string[];
        job?: string;
        check?: boolean;
        json?: boolean;
      }) => {
        const c = ctx();
        const m = await impl();
        const status = await m.readStatus(
          {
            prisma: await c.prisma(),
            temporal: await c.temporal(),
            namespace: c.config.temporal.namespace,
            taskQueues: opts.taskQueue ?? [c.config.temporal.taskQueue],
            // The isolated downstreams' queues derive from the configured one: watched unless the
            // queues are named.
            ...(opts.taskQueue === undefined ? { isolatedQueuesOf: c.config.temporal.taskQueue } : {}),
          },
          {
            ...(opts.window === undefined ? {} : { windowMs: opts.window }),
            ...(opts.job === undefined ? {} : { jobType: opts.job }),
          },
        );
        if (opts.json) printJson(status);
        else print(m, status);
        if (opts.check && !status.healthy) {
          throw new UserFacingError(`${status.problems.length} problems need attention`, 'UNHEALTHY');
        }
      },
    );
}
