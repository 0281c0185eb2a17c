/**
 * `durable-fetch schedules backfill`: runs a schedule for past business dates and, unless
 * --no-wait, follows the runs until every date is done or nothing is left running.
 */
import type { Command } from 'commander';
import type { ScheduleOverlapPolicy } from '@temporalio/client';
import { UserFacingError } from '../../../runtime/errors.ts';
import { addDays, checkBusinessDate } from '../../../contract/business-date.ts';
import type { CliContext } from '../../context.ts';
import { table } from '../../../client/format.ts';
import { FINISHED_STATUSES } from '../../../client/runs.ts';
import { printJson } from '../output.ts';
import { parseDate, parseOverlap, scheduleOf } from './args.ts';

/** Adds `backfill` to the `schedules` command. */
export function registerSchedulesBackfill(schedules: Command, ctx: () => CliContext): void {
  schedules
    .command('backfill')
    .description(
      'run the schedule for past business dates (each date is its business key: done dates are not run again)',
    )
    .argument('<id>', 'source id or schedule id')
    .requiredOption('--from <date>', 'first business date, YYYY-MM-DD', parseDate)
    .requiredOption('--to <date>', 'last business date, YYYY-MM-DD', parseDate)
    .option('--overlap <policy>', `overlap policy of the backfill (default allow_all)`, parseOverlap)
    .option('--no-wait', 'request the backfill and return')
    .option('--json', 'print JSON (the final state)')
    .action(
      async (
        id: string,
        opts: { from: string; to: string; overlap?: ScheduleOverlapPolicy; wait: boolean; json?: boolean },
      ) => {
        if (opts.to < opts.from) throw new UserFacingError('--to is before --from', 'INVALID_INPUT');
        const c = ctx();
        const { handle, description, scheduleId } = await scheduleOf(ctx, id);
        const args = (
          description.action as { args?: { sourceId: string; timeZone: string; dateOffsetDays: number }[] }
        ).args?.[0];
        if (!args)
          throw new UserFacingError(
            `schedule '${scheduleId}' is not a durable-fetch schedule`,
            'INVALID_INPUT',
          );
        // The same future-date policy as every other start.
        const check = checkBusinessDate(opts.to, {
          now: new Date(),
          timeZone: args.timeZone,
          maxFutureDays: c.config.runs.maxFutureDays,
        });
        if (!check.ok) throw new UserFacingError(`--to: ${check.reason}`, 'INVALID_INPUT');
        // Nominal times whose business date (local date + offset) lies in [from, to].
        const { startOfDayIn } = await import('../../../client/schedules.ts');
        const start = startOfDayIn(addDays(opts.from, -args.dateOffsetDays), args.timeZone);
        const end = new Date(
          startOfDayIn(addDays(opts.to, 1 - args.dateOffsetDays), args.timeZone).getTime() - 1,
        );
        // Each date is its own business key, so backfilled starts may overlap freely by default.
        const requestedAt = new Date();
        await handle.backfill({ start, end, overlap: opts.overlap ?? 'ALLOW_ALL' });
        const dates: string[] = [];
        for (let d = opts.from; d <= opts.to; d = addDays(d, 1)) dates.push(d);
        if (!opts.wait) {
          if (opts.json) return printJson({ scheduleId, requested: { from: opts.from, to: opts.to } });
          return console.log(`backfill of ${scheduleId} requested for ${opts.from}..${opts.to}`);
        }
        const prisma = await c.prisma();
        const temporal = await c.temporal();
        let last = '';
        let runs: { date: string; status: string }[];
        for (let idle = 0; ;) {
          const rows = await prisma.fetchRun.findMany({
            where: {
              sourceId: args.sourceId,
              businessDate: {
                gte: new Date(`${opts.from}T00:00:00Z`),
                lte: new Date(`${opts.to}T00:00:00Z`),
              },
            },
            orderBy: { businessDate: 'asc' },
          });
          runs = rows.map((r) => ({ date: r.businessDate.toISOString().slice(0, 10), status: r.status }));
          // A date that had failed or was cancelled before is run again: only its new outcome counts.
          const done = rows.filter(
            (r) =>
              r.status === 'succeeded' ||
              (FINISHED_STATUSES.includes(r.status) && r.updatedAt >= requestedAt),
          );
          const line = `backfill ${scheduleId}: ${done.length}/${dates.length} dates done`;
          if (line !== last) console.error(line);
          last = line;
          if (done.length === dates.length) break;
          let running = 0;
          for await (const _ of temporal.workflow.list({
            query: `WorkflowType = 'scheduledFetchWorkflow' AND FetchSource = '${args.sourceId}' AND ExecutionStatus = 'Running'`,
          })) {
            running++;
          }
          // Nothing running for a while: the schedule has no start on the remaining dates.
          idle = running === 0 ? idle + 1 : 0;
          if (idle >= 10) break;
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
        if (opts.json) return printJson({ scheduleId, from: opts.from, to: opts.to, runs });
        console.log(
          table(
            runs.map((r) => ({ date: r.date, status: r.status })),
            ['date', 'status'],
          ),
        );
      },
    );
}
