import type { Command } from 'commander';
import type { AuditEntry } from '../../../prisma/generated/client.ts';
import { UserFacingError } from '../../../runtime/errors.ts';
import type { CliContext } from '../../context.ts';
import { defaultActor } from '../../../client/audit.ts';
import { duration, table } from '../../../client/format.ts';
import type { Source } from '../../../client/sources/index.ts';
import { printJson } from '../output.ts';
import { registerSourcesAdd } from './add.ts';
import { registerSourcesApply } from './apply.ts';
import { registerSourcesTry } from './try.ts';
import { registerSourcesUpdate } from './update.ts';
import { registerSourcesWatermark, watermarkLine } from './watermark.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = async () => {
  const [m0, m1] = await Promise.all([
    import('../../../client/schedules.ts'),
    import('../../../client/sources/index.ts'),
  ]);
  return { ...m0, ...m1 };
};
type Impl = Awaited<ReturnType<typeof impl>>;

const SOURCES_HELP = `
A source is a partner to fetch from (a row of the "source" table). Pausing one stops it
everywhere: its schedule is paused, new runs are refused, and running runs stop at their next page
boundary (after a stored page, before fetching the next) and wait, durably, until it is resumed or
they are cancelled (\`durable-fetch runs cancel\`). Each source runs one job (--job, fixed when it is
added) with that job's settings (--config, checked by the job). Every add, pause, resume, update and
remove is audited: who (--by, default the OS user), when and why (--reason); \`sources show\` lists
the trail. Removing keeps the source's runs and audit trail; its id is never reused. Sources can
also live in a file of your repository: \`sources validate -f\` checks it, \`sources apply -f\` makes
the table match it.`;

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

function row(m: Impl, s: Source): Record<string, string> {
  return {
    id: s.id,
    job: s.jobType,
    enabled: s.enabled ? 'yes' : 'no',
    paused: s.removedAt
      ? 'removed'
      : s.pausedAt
        ? `yes: ${(s.pausedReason ?? '').replace(/\s+/g, ' ')}`
        : 'no',
    schedule: m.scheduleSummary(s.schedule),
    'base url': s.baseUrl,
    'page size': String(s.pageSize),
    'retry policy': s.retryPolicy,
    'submit summary': s.submitSummary ? 'yes' : 'no',
    'max run time': duration(s.maxRunTimeMs),
  };
}

const COLUMNS = [
  'id',
  'job',
  'enabled',
  'paused',
  'schedule',
  'base url',
  'page size',
  'retry policy',
  'submit summary',
  'max run time',
];

function auditTable(audit: readonly AuditEntry[]): string {
  return table(
    audit.map((a) => ({
      at: a.at.toISOString(),
      actor: a.actor,
      action: a.action,
      reason: (a.reason ?? '').replace(/\s+/g, ' '),
      details: a.details === null ? '' : JSON.stringify(a.details),
    })),
    ['at', 'actor', 'action', 'reason', 'details'],
  );
}

/** `durable-fetch sources list|show|pause|resume|add|remove|update|apply|validate`. */
export function registerSources(program: Command, ctx: () => CliContext): void {
  const sources = program
    .command('sources')
    .description(
      'the partners fetched from: list, show, pause, resume, fix their configuration, apply a file',
    )
    .addHelpText('after', SOURCES_HELP);

  sources
    .command('list')
    .description('every source with its job, state and main settings (removed ones with --all)')
    .option('--all', 'include removed sources')
    .option('--json', 'print JSON')
    .action(async (opts: { all?: boolean; json?: boolean }) => {
      const m = await impl();
      const list = await m.listSources({ prisma: await ctx().prisma() }, { all: opts.all === true });
      if (opts.json) return printJson(list);
      if (list.length === 0) return console.log('no sources');
      console.log(
        table(
          list.map((s) => row(m, s)),
          COLUMNS,
        ),
      );
    });

  sources
    .command('show')
    .description('one source: every setting, its pause, its running runs and its recent audit trail')
    .argument('<id>', 'source id')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const m = await impl();
      const c = ctx();
      const prisma = await c.prisma();
      const found = await m.getSource({ prisma }, id);
      if (!found) throw new UserFacingError(`no source '${id}'`, 'NOT_FOUND');
      const incremental = await m.getWatermark({ prisma }, id);
      const scheduleId = m.scheduleIdFor(c.config.temporal.taskQueue, found);
      if (opts.json) return printJson({ ...found, scheduleId, watermark: incremental.watermark ?? null });
      const fields: [string, string][] = [
        ['id', found.id],
        ['name', found.name],
        ['job', found.jobType],
        ['config', JSON.stringify(found.config)],
        ['enabled', found.enabled ? 'yes' : 'no'],
        ['removed', found.removedAt ? `yes: ${m.removedText(found)}` : 'no'],
        ['paused', found.pausedAt ? `yes: ${m.pauseText(found)}` : 'no'],
        ['base url', found.baseUrl],
        ['credentials ref', found.credentialsRef ?? 'none'],
        ['timezone', found.timezone],
        ['page size', String(found.pageSize)],
        ['retry policy', found.retryPolicy],
        ['submit summary', found.submitSummary ? 'yes' : 'no'],
        ['submit max processing', `${found.submitMaxProcessingMs} ms`],
        ['max run time', `${duration(found.maxRunTimeMs)} (then DeadlineExceeded)`],
        ['local fetch', found.localFetch ? 'yes (ignored while its downstream is isolated)' : 'no'],
        ['downstream', found.downstream],
        [
          'watermark',
          incremental.kind === undefined ? 'not incremental' : watermarkLine(incremental.watermark),
        ],
        ['schedule', m.scheduleSummary(found.schedule)],
        ['schedule config', found.schedule === null ? '' : JSON.stringify(found.schedule)],
        ['schedule id', found.schedule === null ? '' : scheduleId],
        ['running runs', String(found.runningRuns)],
        ['created', found.createdAt.toISOString()],
        ['updated', found.updatedAt.toISOString()],
      ];
      const width = Math.max(...fields.map(([k]) => k.length));
      for (const [k, v] of fields) console.log(`${k.padEnd(width)}  ${v}`.trimEnd());
      console.log('');
      if (found.audit.length === 0) return console.log('audit trail: none');
      console.log('audit trail (most recent last):');
      console.log(auditTable(found.audit));
    });

  sources
    .command('pause')
    .description(
      'pause a source: its schedule stops, new runs are refused, running runs stop at their next page boundary and wait',
    )
    .argument('<id>', 'source id')
    .requiredOption('--reason <text>', 'why (1..1000 characters; kept on the source and audited)')
    .option('--by <who>', 'who (default: the OS user)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { reason: string; by?: string; json?: boolean }) => {
      const m = await impl();
      const c = ctx();
      const paused = await m.pauseSource(
        { prisma: await c.prisma(), temporal: await c.temporal(), taskQueue: c.config.temporal.taskQueue },
        id,
        { reason: opts.reason, actor: opts.by ?? defaultActor() },
      );
      if (opts.json) return printJson(paused);
      const runs =
        paused.runningRuns === 0
          ? 'no running runs'
          : paused.runningRuns === 1
            ? '1 running run stops at its next page boundary'
            : `${paused.runningRuns} running runs stop at their next page boundary`;
      console.log(`paused ${id}: ${paused.schedulePaused ? 'schedule paused' : 'no schedule'}, ${runs}`);
    });

  sources
    .command('resume')
    .description('resume a paused source: its schedule starts again, waiting runs go on at once')
    .argument('<id>', 'source id')
    .option('--reason <text>', 'why (kept in the audit trail)')
    .option('--by <who>', 'who (default: the OS user)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { reason?: string; by?: string; json?: boolean }) => {
      const m = await impl();
      const c = ctx();
      const resumed = await m.resumeSource(
        { prisma: await c.prisma(), temporal: await c.temporal(), taskQueue: c.config.temporal.taskQueue },
        id,
        { actor: opts.by ?? defaultActor(), ...(opts.reason === undefined ? {} : { reason: opts.reason }) },
      );
      if (opts.json) return printJson(resumed);
      const runs =
        resumed.runningRuns === 0
          ? 'no running runs'
          : resumed.signalled === resumed.runningRuns
            ? `${plural(resumed.signalled, 'running run', 'running runs')} signalled to go on`
            : `${resumed.signalled} of ${resumed.runningRuns} running runs signalled to go on (the others had ended)`;
      console.log(
        `resumed ${id}: ${resumed.scheduleResumed ? 'schedule resumed' : 'no paused schedule'}, ${runs} ` +
          `(was ${m.pauseText(resumed.was)})`,
      );
    });

  const describeJobs = registerSourcesAdd(sources, ctx);
  program.hook('preSubcommand', async (_program, command) => {
    if (command === sources) await describeJobs();
  });
  registerSourcesUpdate(sources, ctx);
  registerSourcesTry(sources, ctx);
  registerSourcesApply(sources, ctx);
  registerSourcesWatermark(sources, ctx);
}
