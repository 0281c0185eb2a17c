/** `durable-fetch sources add` and `sources remove`. */
import { type Command, Option } from 'commander';
import { PARTNER_PRESETS } from '../../../contract/retry-presets.ts';
import type { CliContext } from '../../context.ts';
import { defaultActor } from '../../../client/audit.ts';
import type { NewSource } from '../../../client/sources/index.ts';
import { printJson } from '../output.ts';
import { durationMsArg, integerArg, readJsonArg } from './args.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = () => import('../../../client/sources/index.ts');

const ADD_HELP = `
Every value is checked before anything is written, and every problem is reported, one per line.
The source row and its audit entry (source.add) are written in one transaction; with --schedule its
Temporal Schedule is created as \`schedules sync\` would. Secrets never go on the command line:
--credentials-ref names the DF_SECRET_* variable that holds the token.

Examples:
  durable-fetch sources add acme --job fetch-records --base-url https://partner.example/api \\
    --credentials-ref DF_SECRET_ACME --timezone Europe/Paris --reason "new partner (ticket 12)"
  durable-fetch sources add fx-ecb --job exchange-rates --base-url https://fx.example/v1 \\
    --config '{"account":"fx:ecb"}' --schedule '{"cron":"0 2 * * *","dateOffsetDays":-1}' \\
    --submit-summary --reason "daily ECB rates"
  durable-fetch sources add fx-boe --job exchange-rates --base-url https://boe.example \\
    --config @fx-boe.json --reason "BoE rates"`;

const REMOVE_HELP = `
Removing keeps the source's row, runs, records, dead letters and audit trail: it is disabled, marked
removed, left out of \`sources list\` (see --all) and of \`schedules sync\`, and refused by \`run\`.
Its id is never reused. Refused while a run of it is open (queued, running, waiting to retry) or a
downstream action of it is unsettled (\`durable-fetch compensations list\`).

Example:
  durable-fetch sources remove acme --reason "contract ended (ticket 99)"`;

interface AddOpts {
  job: string;
  baseUrl: string;
  name?: string;
  credentialsRef?: string;
  timezone?: string;
  pageSize?: number;
  retryPolicy?: string;
  schedule?: string;
  config?: string;
  submitSummary?: boolean;
  submitMaxProcessing?: number;
  maxRunTime?: number;
  localFetch?: boolean;
  downstream?: string;
  reason: string;
  by?: string;
  json?: boolean;
}

const JOB_HELP = 'the job that runs it';

/**
 * Registers `sources add` and `sources remove` under `sources`. Returns what completes the help of
 * `--job` with the job types: they come from the job registry (its schemas need zod), which only
 * a `sources …` command line loads, so the caller runs it just before `sources` is dispatched.
 */
export function registerSourcesAdd(sources: Command, ctx: () => CliContext): () => Promise<void> {
  const job = new Option('--job <type>', JOB_HELP).makeOptionMandatory();
  sources
    .command('add')
    .description('add a source (every value checked first; audited; its schedule created)')
    .argument('<id>', "the new source's id: 1..63 of a-z, 0-9, '-' and '_' (never reused)")
    .addOption(job)
    .requiredOption('--base-url <url>', "the partner's http(s) base URL (no credentials in it)")
    .option('--name <text>', 'display name (default: the id)')
    .option('--credentials-ref <NAME>', 'name of the DF_SECRET_* variable holding the bearer token')
    .option('--timezone <zone>', 'IANA timezone of business dates and the schedule (default UTC)')
    .option('--page-size <n>', 'records per stored page, 1..1000 (default 1000)', integerArg)
    .option('--retry-policy <name>', `partner retry preset (${PARTNER_PRESETS.join('|')})`)
    .option('--schedule <json>', 'when it runs on its own, e.g. \'{"cron":"0 2 * * *"}\' (default: never)')
    .option('--config <json|@file>', "the job's settings as JSON, or @file to read them (checked by the job)")
    .option('--submit-summary', 'runs submit their summary downstream (jobs with a downstream action)')
    .option(
      '--submit-max-processing <duration>',
      'the longest the partner may take to apply a submission: 60000 (ms), 90s, 5m (default 60s)',
      durationMsArg,
    )
    .option(
      '--max-run-time <duration>',
      'the longest one run may take, pauses and retries included, then it ends DeadlineExceeded: 90s, 30m, 24h, 2d (default 24h)',
      durationMsArg,
    )
    .option(
      '--local-fetch',
      "fetch partner pages as local activities, in the worker that runs the workflow: fewer round trips to Temporal, but no heartbeat, fairness key or queue rate limit (R8), and slow calls hold the slots every run's database steps share; ignored when its downstream is isolated (the default)",
    )
    .option(
      '--no-local-fetch',
      'fetch partner pages as activity tasks on a task queue: for a partner slow enough to hold up other runs, when it is not isolated',
    )
    .option('--downstream <name>', 'the downstream its actions go to (default "default")')
    .requiredOption('--reason <text>', 'why (1..1000 characters; audited)')
    .option('--by <who>', 'who (default: the OS user)')
    .option('--json', 'print JSON')
    .addHelpText('after', ADD_HELP)
    .action(async (id: string, opts: AddOpts) => {
      const m = await impl();
      const [schedule, config] = await Promise.all([
        opts.schedule === undefined ? undefined : readJsonArg('--schedule', opts.schedule),
        opts.config === undefined ? undefined : readJsonArg('--config', opts.config),
      ]);
      const input: NewSource = {
        id,
        jobType: opts.job,
        baseUrl: opts.baseUrl,
        name: opts.name,
        credentialsRef: opts.credentialsRef,
        timezone: opts.timezone,
        pageSize: opts.pageSize,
        retryPolicy: opts.retryPolicy,
        schedule: schedule?.ok ? schedule.value : undefined,
        config: config?.ok ? config.value : undefined,
        submitSummary: opts.submitSummary,
        submitMaxProcessingMs: opts.submitMaxProcessing,
        maxRunTimeMs: opts.maxRunTime,
        localFetch: opts.localFetch,
        downstream: opts.downstream,
      };
      const c = ctx();
      const added = await m.addSource(
        {
          prisma: await c.prisma(),
          temporal: await c.temporal(),
          taskQueue: c.config.temporal.taskQueue,
          maxFutureDays: c.config.runs.maxFutureDays,
        },
        input,
        {
          actor: opts.by ?? defaultActor(),
          reason: opts.reason,
          inputProblems: [schedule, config].flatMap((a) => (a && !a.ok ? [a.problem] : [])),
        },
      );
      if (opts.json) return printJson(added);
      const s = added.source;
      const scheduled =
        added.scheduleId === null
          ? 'no schedule'
          : `schedule ${m.scheduleSummary(s.schedule)} (${added.scheduleId} ${added.schedule ?? 'unchanged'})`;
      console.log(`added ${s.id} (job ${s.jobType}): ${s.baseUrl}, ${scheduled}`);
      console.log(`config ${JSON.stringify(s.config)}`);
    });

  sources
    .command('remove')
    .description('remove a source: disabled, its schedule deleted; its runs, records and audit trail kept')
    .argument('<id>', 'source id')
    .requiredOption('--reason <text>', 'why (1..1000 characters; audited)')
    .option('--by <who>', 'who (default: the OS user)')
    .option('--json', 'print JSON')
    .addHelpText('after', REMOVE_HELP)
    .action(async (id: string, opts: { reason: string; by?: string; json?: boolean }) => {
      const m = await impl();
      const c = ctx();
      const removed = await m.removeSource(
        { prisma: await c.prisma(), temporal: await c.temporal(), taskQueue: c.config.temporal.taskQueue },
        id,
        { actor: opts.by ?? defaultActor(), reason: opts.reason },
      );
      if (opts.json) return printJson(removed);
      const schedule = removed.scheduleDeleted ? `schedule ${removed.scheduleId} deleted` : 'no schedule';
      console.log(`removed ${id}: ${schedule}; its runs, records and audit trail are kept`);
    });
  return async () => {
    const { defaultJobs } = await import('../../../jobs/registry.ts');
    job.description = `${JOB_HELP} (${defaultJobs().types.join('|')})`;
  };
}
