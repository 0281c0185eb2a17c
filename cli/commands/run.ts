import type { Command } from 'commander';
import { UserFacingError } from '../../runtime/errors.ts';
import { duration, failureSummary, workflowUrl } from '../../client/format.ts';
import type { CliContext } from '../context.ts';
import { printJson } from './output.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = () => import('../../client/start-fetch.ts');

/** `durable-fetch run <sourceId> [--date] [--wait] [--json]` */
export function registerRun(program: Command, ctx: () => CliContext): void {
  program
    .command('run')
    .description('start (or join) the run of a business key: fetch-records for <sourceId> on a date')
    .argument('<sourceId>', 'id of a configured source, e.g. demo')
    .option('--date <YYYY-MM-DD>', "business date (default: today in the source's timezone)")
    .option('--wait', 'wait for the run to finish and print its outcome')
    .option('--json', 'print JSON instead of text')
    .action(async (sourceId: string, opts: { date?: string; wait?: boolean; json?: boolean }) => {
      const m = await impl();
      const c = ctx();
      // Input and database first: a bad date is reported as such even when Temporal is down.
      const prepared = await m.prepareFetch(
        {
          prisma: await c.prisma(),
          maxFutureDays: c.config.runs.maxFutureDays,
          maxInputBytes: c.config.runs.maxInputBytes,
        },
        { sourceId, date: opts.date, requestedBy: 'cli' },
      );
      const started = await m.launchFetch(
        { temporal: await c.temporal(), taskQueue: c.config.temporal.taskQueue },
        prepared,
      );
      const { workflowId, runId, businessDate, joined } = started;
      const ui = c.config.temporal.uiUrl;
      const link = ui ? workflowUrl(ui, c.config.temporal.namespace, workflowId) : undefined;
      if (!opts.wait) {
        if (opts.json) return printJson({ workflowId, runId, businessDate, joined, webUi: link });
        console.log(`${joined ? 'joined existing' : 'started'} run ${workflowId} (run id ${runId})`);
        if (link) console.log(`web ui: ${link}`);
        return;
      }
      if (!opts.json) console.log(`${joined ? 'joined' : 'started'} ${workflowId}; waiting…`);
      const t0 = Date.now();
      let result;
      try {
        result = await started.handle.result();
      } catch (err) {
        // The run failed: one line (or JSON) and exit 1, never a stack trace.
        if (opts.json)
          printJson({ workflowId, runId, businessDate, joined, webUi: link, failure: failureSummary(err) });
        throw new UserFacingError(`run ${workflowId} failed: ${failureSummary(err)}`, 'RUN_FAILED');
      }
      if (opts.json) return printJson({ workflowId, runId, businessDate, joined, webUi: link, result });
      if (result.status === 'succeeded') {
        console.log(
          `succeeded: ${result.records} records in ${result.pages} pages (${duration(Date.now() - t0)})`,
        );
      } else {
        console.log(
          `duplicate: run ${result.fetchRunId} is owned by ${result.ownerWorkflowId} (${result.existingStatus})`,
        );
      }
    });
}
