/** `durable-fetch sources apply -f` and `sources validate -f`: sources kept as a file in a repository. */
import type { Command } from 'commander';
import { UserFacingError } from '../../../runtime/errors.ts';
import type { CliContext } from '../../context.ts';
import { defaultActor } from '../../../client/audit.ts';
import { table } from '../../../client/format.ts';
import type { ApplyReport, PlanAction } from '../../../client/sources/index.ts';
import { printJson } from '../output.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = () => import('../../../client/sources/index.ts');

const FILE_HELP = `
The file (YAML or JSON) lists every source under "sources", each with the settings \`sources add\`
takes, camelCase, checked by the same rules (config by the source's job):

  # yaml-language-server: $schema=../sources.schema.json
  sources:
    - id: acme                  # required; never reused
      job: fetch-records        # default fetch-records; fixed once added
      baseUrl: https://partner.example/api
      credentialsRef: DF_SECRET_ACME
      schedule: { cron: "0 2 * * *", dateOffsetDays: -1 }
      config: {}

Other keys: name, timezone, pageSize, retryPolicy, downstream, submitSummary,
submitMaxProcessingMs, maxRunTimeMs, localFetch, enabled. A setting left out means its default
(what \`sources add\` gives), so removing a line resets the value. sources.schema.json (\`npm run schema:sources\`) is the
file's JSON Schema, for editors. Each problem is one line: <file>: <path>: <message>.

An optional "downstreams" list sets each partner's R8 limits (a source names its partner with
\`downstream\`; a name the list leaves out runs on the defaults, on the shared task queue):

  downstreams:
    - id: acme-api
      isolated: true            # its own task queue and worker slots (maxConcurrentCalls: 10)
      callsPerSecond: 20        # Temporal's server-side limit, across every worker
      sourceCallsPerSecond: 5   # per source (fairness key); sourceWeights: { acme: 2 }
      breaker: { failureRate: 0.5, minCalls: 20, windowMs: 60000, openMs: 30000, trialCalls: 3 }
      retryBudget: { ratio: 0.2, minRetries: 10, windowMs: 60000 }`;

const APPLY_HELP = `${FILE_HELP}

Each source of the file is created (audited source.add), updated (only the fields that differ,
audited source.update with before and after) or left unchanged, in one transaction; the schedules
of the sources it changed are synced before it commits. A file with any problem changes nothing,
and so does one that changes a source's job type or names a removed source (ids are never reused).
With --prune, every live source the file leaves out is removed as \`sources remove\` removes it;
one with open runs or unsettled actions is refused (exit 1) while the rest applies.
When the file lists downstreams, the downstream table is made to match it in the same
transaction (audited downstream.set / downstream.remove, with before and after); a change that
moves a downstream's partner calls to another task queue while its sources have live runs is
refused. Applying the same file again changes nothing and writes no audit entry.

Examples:
  durable-fetch sources apply -f sources.yaml --dry-run
  durable-fetch sources apply -f sources.yaml --prune --reason "partners of release 42"`;

const VALIDATE_HELP = `${FILE_HELP}

Opens neither the database nor Temporal: it checks the syntax, every setting and each job's
config against the jobs this deployment registers (and schedules against
DURABLE_FETCH_MAX_FUTURE_DAYS). Prints "ok: N sources" (and ", M downstreams" when it lists
them), or the problems (exit 1).

Example:
  durable-fetch sources validate -f sources.yaml`;

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

const DONE: Record<PlanAction, string> = {
  create: 'created',
  update: 'updated',
  unchanged: 'unchanged',
  remove: 'removed',
  refused: 'refused',
};
const PLANNED: Record<PlanAction, string> = {
  create: 'to create',
  update: 'to update',
  unchanged: 'unchanged',
  remove: 'to remove',
  refused: 'refused',
};

/** The report as an aligned table and a summary line. */
function printReport(report: ApplyReport): void {
  if (report.changes.length > 0) {
    const rows = report.changes.map((c) => ({ source: c.id, action: c.action, fields: c.fields.join(', ') }));
    console.log(table(rows, ['source', 'action', 'fields']));
  }
  if (report.downstreams.length > 0) {
    const rows = report.downstreams.map((c) => ({
      downstream: c.id,
      action: c.action,
      settings: c.fields.join(', '),
    }));
    console.log(table(rows, ['downstream', 'action', 'settings']));
  }
  for (const q of report.queues) {
    if (!q.applied)
      console.log(
        `task queue ${q.taskQueue}: Temporal refused its limits (${q.error}); the workers apply them again`,
      );
    else if (q.changed && q.inForce) console.log(`task queue ${q.taskQueue}: limits applied`);
    else if (q.changed)
      console.log(
        `task queue ${q.taskQueue}: limits written; Temporal had not put them in force on the queue yet (the workers check again at their next refresh)`,
      );
  }
  const words = report.dryRun ? PLANNED : DONE;
  const counts = (Object.keys(words) as PlanAction[])
    .filter((a) => a !== 'refused' || report.counts.refused > 0)
    .map((a) => `${report.counts[a]} ${words[a]}`)
    .join(', ');
  if (report.dryRun) return console.log(`dry run of ${report.file}: ${counts}; nothing was changed`);
  const moved = report.schedules.filter((s) => s.change !== 'unchanged');
  const schedules = moved.map((s) => `${s.change} ${s.scheduleId}`).join(', ') || 'none changed';
  console.log(`applied ${report.file}: ${counts}; schedules: ${schedules}`);
}

interface ApplyOpts {
  file: string;
  dryRun?: boolean;
  prune?: boolean;
  reason?: string;
  by?: string;
  json?: boolean;
}

/** Registers `sources apply` and `sources validate` under `sources`. */
export function registerSourcesApply(sources: Command, ctx: () => CliContext): void {
  sources
    .command('apply')
    .description('make the sources match a file (YAML or JSON): create, update, and with --prune remove')
    .requiredOption('-f, --file <path>', 'the sources file (YAML or JSON)')
    .option('--dry-run', 'print the plan; change nothing (no database write, no schedule call)')
    .option('--prune', 'remove the live sources the file leaves out (as `sources remove`, with its refusals)')
    .option('--reason <text>', 'why (1..1000 characters; audited; default "sources apply -f <file>")')
    .option('--by <who>', 'who (default: the OS user)')
    .option(
      '--json',
      'print JSON: { file, dryRun, changes: [{ id, action, fields }], counts, schedules, downstreams: [{ id, action, fields }], queues }',
    )
    .addHelpText('after', APPLY_HELP)
    .action(async (opts: ApplyOpts) => {
      const m = await impl();
      const c = ctx();
      const { defaultJobs } = await import('../../../jobs/registry.ts');
      const jobs = defaultJobs();
      const maxFutureDays = c.config.runs.maxFutureDays;
      const read = await m.readSourcesFile(opts.file, { jobs, maxFutureDays });
      const outcome = opts.dryRun ? 'nothing would change' : 'nothing was changed';
      if (!read.ok) throw m.fileProblemsError(opts.file, read.problems, outcome);
      const report = await m.applySources(
        {
          prisma: await c.prisma(),
          temporal: () => c.temporal(),
          taskQueue: c.config.temporal.taskQueue,
          jobs,
          maxFutureDays,
        },
        read.file,
        {
          actor: opts.by ?? defaultActor(),
          ...(opts.reason === undefined ? {} : { reason: opts.reason }),
          prune: opts.prune === true,
          dryRun: opts.dryRun === true,
        },
      );
      if (opts.json) printJson(report);
      else printReport(report);
      // Printed in full first; the refusals then make the exit code 1 (cli/main.ts main).
      const refused = report.changes.filter((ch) => ch.action === 'refused');
      if (refused.length > 0) {
        const verb = report.dryRun ? 'would not be removed' : 'not removed';
        const head = `${plural(refused.length, 'source', 'sources')} ${verb}:`;
        throw new UserFacingError([head, ...refused.map((r) => r.problem ?? r.id)].join('\n'), 'SOURCE_BUSY');
      }
    });

  sources
    .command('validate')
    .description('check a sources file (syntax, settings, job configs) without the database or Temporal')
    .requiredOption('-f, --file <path>', 'the sources file (YAML or JSON)')
    .option(
      '--json',
      'print JSON: { file, ok, sources, downstreams, problems } (downstreams: how many it lists)',
    )
    .addHelpText('after', VALIDATE_HELP)
    .action(async (opts: { file: string; json?: boolean }) => {
      const m = await impl();
      // Configuration only (the future-date policy): the CLI context, which opens the database
      // and Temporal, is never created here.
      const [{ loadConfig }, { defaultJobs }] = await Promise.all([
        import('../../../runtime/config.ts'),
        import('../../../jobs/registry.ts'),
      ]);
      const maxFutureDays = loadConfig().runs.maxFutureDays;
      const read = await m.readSourcesFile(opts.file, { jobs: defaultJobs(), maxFutureDays });
      const problems = read.ok ? [] : read.problems;
      const count = read.ok ? read.file.sources.length : 0;
      const downstreams = read.ok ? read.file.downstreams?.length : undefined;
      if (opts.json) printJson({ file: opts.file, ok: read.ok, sources: count, downstreams, problems });
      else if (read.ok) {
        const listed =
          downstreams === undefined ? '' : `, ${plural(downstreams, 'downstream', 'downstreams')}`;
        console.log(`ok: ${plural(count, 'source', 'sources')}${listed}`);
      }
      if (!read.ok) throw m.fileProblemsError(opts.file, problems);
    });
}
