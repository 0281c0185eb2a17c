/** `durable-fetch sources update`: fixing a source's configuration. */
import { type Command, Option } from 'commander';
import { UserFacingError } from '../../../runtime/errors.ts';
import { PARTNER_PRESETS } from '../../../contract/retry-presets.ts';
import type { CliContext } from '../../context.ts';
import { defaultActor } from '../../../client/audit.ts';
import type { SourceUpdate } from '../../../client/sources/index.ts';
import { printJson } from '../output.ts';
import { durationMsArg, integerArg, readJsonArg } from './args.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = () => import('../../../client/sources/index.ts');

const shown = (v: unknown) =>
  v === null || v === undefined ? 'none' : typeof v === 'string' ? v : JSON.stringify(v);

interface UpdateOpts {
  name?: string;
  baseUrl?: string;
  pageSize?: number;
  retryPolicy?: string;
  credentialsRef?: string | false;
  timezone?: string;
  enable?: boolean;
  disable?: boolean;
  submitSummary?: boolean;
  submitMaxProcessing?: number;
  maxRunTime?: number;
  localFetch?: boolean;
  config?: string;
  schedule?: string | false;
  downstream?: string;
  job?: string;
  reason: string;
  by?: string;
  json?: boolean;
}

/** Registers `sources update` under `sources`. */
export function registerSourcesUpdate(sources: Command, ctx: () => CliContext): void {
  sources
    .command('update')
    .description(
      "fix a source's configuration (validated first; what changed is audited with before and after)",
    )
    .argument('<id>', 'source id')
    .option('--name <text>', 'display name')
    .option('--base-url <url>', "the partner's http(s) base URL (no credentials in it)")
    .option('--page-size <n>', 'records per stored page, 1..1000 (new runs)', integerArg)
    .option('--retry-policy <name>', `partner retry preset (${PARTNER_PRESETS.join('|')}; new runs)`)
    .option('--credentials-ref <NAME>', 'name of the DF_SECRET_* variable holding the bearer token')
    .option('--no-credentials-ref', 'send no credentials')
    .option('--timezone <zone>', 'IANA timezone of business dates and the schedule, e.g. Europe/Paris')
    .addOption(new Option('--enable', 'enable the source').conflicts('disable'))
    .addOption(new Option('--disable', 'disable the source (its runs fail at their next page)'))
    .option('--submit-summary', 'runs submit their summary downstream')
    .option('--no-submit-summary', 'runs do not submit their summary')
    .option(
      '--submit-max-processing <ms>',
      'the longest the partner may take to apply a submission after receiving it: a lookup that finds nothing proves "not applied" only after the call timeouts plus this; 60000 (ms), 90s, 5m (default 60000)',
      durationMsArg,
    )
    .option(
      '--max-run-time <duration>',
      'the longest one run may take, pauses and retries included (new runs; then DeadlineExceeded): 90s, 30m, 24h, 2d',
      durationMsArg,
    )
    .option(
      '--local-fetch',
      "fetch partner pages as local activities, in the worker that runs the workflow (new runs): fewer round trips to Temporal, but no heartbeat, fairness key or queue rate limit (R8), and slow calls hold the slots every run's database steps share; ignored when its downstream is isolated",
    )
    .option(
      '--no-local-fetch',
      'fetch partner pages as activity tasks on a task queue (new runs): for a partner slow enough to hold up other runs, when it is not isolated',
    )
    .option('--config <json|@file>', "the job's settings as JSON, or @file to read them (checked by the job)")
    .option(
      '--schedule <json>',
      'when it runs on its own, as `sources add --schedule` takes it, e.g. \'{"cron":"0 2 * * *"}\': checked first, then its Temporal Schedule is created or updated before the change commits',
    )
    .option('--no-schedule', 'it runs only when started: its Temporal Schedule is deleted')
    .option(
      '--downstream <name>',
      'the downstream its actions go to (new runs): "default", or one the downstream table or another source names',
    )
    .option('--job <type>', "refused: a source's job type never changes (add a new source instead)")
    .requiredOption('--reason <text>', 'why (1..1000 characters; audited)')
    .option('--by <who>', 'who (default: the OS user)')
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      `
A change of --schedule, --timezone or --enable/--disable keeps the source's Temporal Schedule in
line as \`sources apply\` does: it is created, updated (an operator's pause kept) or deleted before
the change commits, and a schedule Temporal refuses changes nothing.

Examples:
  durable-fetch sources update fx-ecb --config '{"account":"fx:ecb-2"}' --page-size 100 \\
    --reason "new ledger account (ticket 31)"
  durable-fetch sources update fx-ecb --schedule '{"cron":"0 3 * * *","dateOffsetDays":-1}' \\
    --reason "partner publishes later (ticket 40)"
  durable-fetch sources update acme --downstream acme-api --reason "own breaker (ticket 41)"`,
    )
    .action(async (id: string, opts: UpdateOpts) => {
      const m = await impl();
      if (opts.job !== undefined) {
        throw new UserFacingError(
          `the job type of source '${id}' cannot change (its runs, records and keys belong to its job): add a new source with --job ${opts.job} instead`,
          'INVALID_INPUT',
        );
      }
      const [config, schedule] = await Promise.all([
        opts.config === undefined ? undefined : readJsonArg('--config', opts.config),
        typeof opts.schedule === 'string' ? readJsonArg('--schedule', opts.schedule) : undefined,
      ]);
      const unread = [config, schedule].flatMap((a) => (a && !a.ok ? [a.problem] : []));
      if (unread.length > 0) {
        throw new UserFacingError(`invalid update of source '${id}': ${unread.join('; ')}`, 'INVALID_INPUT');
      }
      const changes: SourceUpdate = {
        name: opts.name,
        baseUrl: opts.baseUrl,
        pageSize: opts.pageSize,
        retryPolicy: opts.retryPolicy,
        credentialsRef: opts.credentialsRef === false ? null : opts.credentialsRef,
        timezone: opts.timezone,
        enabled: opts.enable ? true : opts.disable ? false : undefined,
        submitSummary: opts.submitSummary,
        submitMaxProcessingMs: opts.submitMaxProcessing,
        maxRunTimeMs: opts.maxRunTime,
        localFetch: opts.localFetch,
        config: config?.ok ? config.value : undefined,
        schedule: opts.schedule === false ? null : schedule?.ok ? schedule.value : undefined,
        downstream: opts.downstream,
      };
      const c = ctx();
      const context = {
        prisma: await c.prisma(),
        temporal: () => c.temporal(),
        taskQueue: c.config.temporal.taskQueue,
        maxFutureDays: c.config.runs.maxFutureDays,
      };
      const updated = await m.updateSource(context, id, changes, {
        actor: opts.by ?? defaultActor(),
        reason: opts.reason,
      });
      if (opts.json) return printJson(updated);
      if (updated.changed.length === 0) {
        return console.log(`nothing changed: ${id} already has those values`);
      }
      const what = updated.changed
        .map((f) => `${f} ${shown(updated.before[f])} -> ${shown(updated.after[f])}`)
        .join(', ');
      console.log(`updated ${id}: ${what}`);
      if (updated.schedule !== null) console.log(`schedule ${updated.scheduleId} ${updated.schedule}`);
    });
}
