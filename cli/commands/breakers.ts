/**
 * `durable-fetch breakers list|show|open|close`: R8's shared circuit breakers as operators see
 * and steer them (client/breakers.ts).
 */
import type { Command } from 'commander';
import type { CliContext } from '../context.ts';
import { defaultActor } from '../../client/audit.ts';
import type { DownstreamBreaker } from '../../client/breakers.ts';
import type { DownstreamQueueConfig } from '../../client/downstream-queues.ts';
import { errorMessage } from '../../runtime/errors.ts';
import { duration, table } from '../../client/format.ts';
import { printAuditTrail, printJson } from './output.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = async () => {
  const [m0, m1, m2] = await Promise.all([
    import('../../db/ledger/downstreams.ts'),
    import('../../client/breakers.ts'),
    import('../../client/downstream-queues.ts'),
  ]);
  return { ...m0, ...m1, ...m2 };
};
type Impl = Awaited<ReturnType<typeof impl>>;

const BREAKERS_HELP = `
Each downstream (a partner, named by its sources' \`downstream\`) has one circuit breaker, shared
by every worker through PostgreSQL. Closed: calls go out and failures that say the partner is
unwell (timeouts, network errors, 5xx, 429) are counted; when they reach the failure rate over the
window (with the minimum number of calls) it opens. Open: no call goes out; runs wait, retrying
with CircuitOpen when it will let trial calls through (half-open); a trial's success closes it, a
failure opens it again. Retries also draw on the downstream's retry budget: at most a share of the
calls of its window (or a floor); a retry beyond it waits.
\`breakers open\` forces a breaker open until \`breakers close\`: no worker calls the partner from
its next call on (each call reads the breaker row); calls already out finish. Runs wait: they
retry with CircuitOpen, and a step that spends its attempts so runs again after a wait (up to 120
times, within the source's maximum run time). \`breakers close\` lets calls go out again and counts
failures from then on. Both are audited (who: --by, default the OS user; why: --reason). Opening a
breaker already forced open, or closing a closed one, is refused (exit 1) and changes nothing, as
is a downstream that no downstream row, source or breaker names (a typo would steer nothing).`;

/** The task queue of the downstream's partner calls: its own when isolated, else the shared one. */
const queueName = (m: Impl, b: DownstreamBreaker, taskQueue: string) =>
  b.settings.isolated ? m.downstreamTaskQueue(taskQueue, b.downstream) : taskQueue;
const queueOf = (m: Impl, b: DownstreamBreaker, taskQueue: string) =>
  `${b.settings.isolated ? 'isolated' : 'shared'}: ${queueName(m, b, taskQueue)}`;

function row(m: Impl, b: DownstreamBreaker, taskQueue: string): Record<string, string> {
  return {
    downstream: b.downstream,
    state: m.stateCell(b),
    since: b.changedAt?.toISOString() ?? '-',
    reason: (b.reason ?? '').replace(/\s+/g, ' '),
    'calls/failed': `${b.window.calls}/${b.window.failures}`,
    retries: m.budgetCell(b),
    queue: queueOf(m, b, taskQueue),
  };
}

const COLUMNS = ['downstream', 'state', 'since', 'reason', 'calls/failed', 'retries', 'queue'];

/** Temporal's side of an isolated downstream's limits: what it enforces now, and what the API set. */
function temporalText(t: { config: DownstreamQueueConfig } | { error: string } | undefined): string {
  if (t === undefined) return '- (shared queue: no limits of its own)';
  if ('error' in t) return `unknown: ${t.error}`;
  const { queueLimit, sourceLimit, effective } = t.config;
  const now = effective ? `${effective.perSecond}/s in force (${effective.source})` : 'no limit in force';
  const set = [
    queueLimit ? `queue ${queueLimit.perSecond}/s` : 'queue unset',
    sourceLimit ? `per source ${sourceLimit.perSecond}/s` : 'per source unset',
  ];
  return `${now}; ${set.join(', ')}`;
}

/** `durable-fetch breakers list|show|open|close`. */
export function registerBreakers(program: Command, ctx: () => CliContext): void {
  const breakers = program
    .command('breakers')
    .description("downstreams' shared circuit breakers and retry budgets: see them, force one open or closed")
    .addHelpText('after', BREAKERS_HELP);

  breakers
    .command('list')
    .description(
      'every downstream (a downstream row, a source or a breaker names it): state, since, reason, window calls/failures, retries vs the budget, queue',
    )
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const m = await impl();
      const c = ctx();
      const list = await m.listBreakers({ prisma: await c.prisma() });
      const taskQueue = c.config.temporal.taskQueue;
      if (opts.json) {
        return printJson(list.map((b) => ({ ...b, taskQueue: queueName(m, b, taskQueue) })));
      }
      if (list.length === 0) return console.log('no downstreams');
      console.log(
        table(
          list.map((b) => row(m, b, taskQueue)),
          COLUMNS,
        ),
      );
    });

  breakers
    .command('show')
    .description('one downstream: its breaker, retry budget, settings, sources and breaker audit trail')
    .argument('<downstream>', 'downstream name')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { json?: boolean }) => {
      const m = await impl();
      const c = ctx();
      const b = await m.showBreaker({ prisma: await c.prisma() }, name);
      const taskQueue = c.config.temporal.taskQueue;
      // What Temporal enforces on an isolated downstream's queue, as it says it.
      const temporal = b.settings.isolated
        ? await m
            .describeDownstreamQueueConfig(
              await c.temporal(),
              c.config.temporal.namespace,
              taskQueue,
              b.downstream,
            )
            .then((config) => ({ config }))
            .catch((err: unknown) => ({ error: errorMessage(err) }))
        : undefined;
      if (opts.json) return printJson({ ...b, taskQueue: queueName(m, b, taskQueue), temporal });
      const { breaker: s, retryBudget: r } = b.settings;
      const fields: [string, string][] = [
        ['downstream', b.downstream],
        ['state', m.breakerText(b)],
        ['since', b.changedAt?.toISOString() ?? '-'],
        ['changed by', b.changedBy ?? '-'],
        ['half-open at', b.state === 'open' && !b.forced ? (b.halfOpenAt?.toISOString() ?? '-') : '-'],
        [
          'window',
          `${b.window.calls} calls, ${b.window.failures} failed (last ${duration(s.windowMs)}, since it last closed)`,
        ],
        [
          'retry budget',
          `${b.budget.retries} of ${b.budget.allowed} retries${b.budget.exhausted ? ' (spent: retries wait)' : ''} over ${b.budget.calls} calls (last ${duration(r.windowMs)})`,
        ],
        [
          'settings',
          b.configured ? 'the downstream row (sources apply)' : 'the defaults (no downstream row)',
        ],
        [
          'breaker',
          `opens at ${Math.round(s.failureRate * 100)}% failed of at least ${s.minCalls} calls in ${duration(s.windowMs)}; open ${duration(s.openMs)}; ${s.trialCalls} trial calls`,
        ],
        [
          'budget',
          `${Math.round(r.ratio * 100)}% of the calls, at least ${r.minRetries}, over ${duration(r.windowMs)}`,
        ],
        ['queue', queueOf(m, b, taskQueue)],
        ['max concurrent calls', b.settings.isolated ? `${b.settings.maxConcurrentCalls} per worker` : '-'],
        [
          'calls per second',
          b.settings.callsPerSecond === undefined ? 'no limit' : String(b.settings.callsPerSecond),
        ],
        [
          'per source',
          b.settings.sourceCallsPerSecond === undefined ? 'no limit' : `${b.settings.sourceCallsPerSecond}/s`,
        ],
        ['source weights', JSON.stringify(b.settings.sourceWeights)],
        ['in Temporal', temporalText(temporal)],
        ['sources', b.sources.join(', ') || 'none'],
      ];
      const width = Math.max(...fields.map(([k]) => k.length));
      for (const [k, v] of fields) console.log(`${k.padEnd(width)}  ${v}`.trimEnd());
      console.log('');
      printAuditTrail(b.audit);
    });

  for (const to of ['open', 'closed'] as const) {
    const verb = to === 'open' ? 'open' : 'close';
    breakers
      .command(verb)
      .description(
        to === 'open'
          ? 'force a breaker open: no worker calls the partner until `breakers close` (audited)'
          : 'close a breaker: calls go out again, failures count from now (audited)',
      )
      .argument('<downstream>', 'downstream name')
      .requiredOption('--reason <text>', 'why (1..1000 characters; kept on the breaker and audited)')
      .option('--by <who>', 'who (default: the OS user)')
      .option('--json', 'print JSON')
      .action(async (name: string, opts: { reason: string; by?: string; json?: boolean }) => {
        const m = await impl();
        const c = ctx();
        const done = await m.overrideBreaker({ prisma: await c.prisma() }, name, to, {
          reason: opts.reason,
          actor: opts.by ?? defaultActor(),
        });
        if (opts.json) return printJson(done);
        const was = m.breakerText(done.before);
        console.log(
          to === 'open'
            ? `opened the breaker of ${done.downstream}: no partner calls until \`breakers close ${done.downstream}\`; it was ${was}`
            : `closed the breaker of ${done.downstream}: partner calls go out again; it was ${was}`,
        );
      });
  }
}
