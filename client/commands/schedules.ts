import { type Command, InvalidArgumentError } from 'commander';
import { ScheduleNotFoundError, type ScheduleOverlapPolicy } from '@temporalio/client';
import { UserFacingError } from '../../runtime/errors.ts';
import { addDays, checkBusinessDate } from '../../workflows/business-date.ts';
import { isBusinessDate } from '../../workflows/business-key.ts';
import type { CliContext } from '../cli-context.ts';
import { table } from '../format.ts';
import { FINISHED_STATUSES } from '../runs.ts';
import { OVERLAP_POLICIES, resolveScheduleId, startOfDayIn, syncSchedules } from '../schedules.ts';
import { printJson } from './output.ts';

const SCHEDULING_HELP = `
A source runs on its own when its "schedule" (a JSON column of the source row) says when, e.g.
  {"cron": "0 2 * * *", "dateOffsetDays": -1, "overlap": "skip", "catchupWindow": "1d"}
  {"every": "1h", "jitter": "5m", "pauseOnFailure": true}
"schedules sync" makes Temporal's Schedules match; npm start runs it on boot. A scheduled run's
business date is the schedule's nominal time in the source's timezone plus dateOffsetDays (a daily
02:00 run with -1 fetches the previous day). <id> is a source id or a schedule id.`;

function parseOverlap(value: string): ScheduleOverlapPolicy {
  const key = value.toLowerCase().replaceAll('-', '_');
  if (!(OVERLAP_POLICIES as readonly string[]).includes(key)) {
    throw new InvalidArgumentError(`expected one of ${OVERLAP_POLICIES.join(', ')}`);
  }
  return key.toUpperCase() as ScheduleOverlapPolicy;
}

function parseDate(value: string): string {
  if (!isBusinessDate(value)) throw new InvalidArgumentError('expected a date YYYY-MM-DD');
  return value;
}

const iso = (d: Date | undefined) => d?.toISOString() ?? '';

/** `durable-fetch schedules sync|list|describe|pause|resume|trigger|backfill` */
export function registerSchedules(program: Command, ctx: () => CliContext): void {
  const schedules = program
    .command('schedules')
    .description("Temporal Schedules of the sources (kept in line with each source's schedule config)")
    .addHelpText('after', SCHEDULING_HELP);

  const handleOf = async (id: string) => {
    const c = ctx();
    const scheduleId = resolveScheduleId(c.config.temporal.taskQueue, id);
    const handle = (await c.temporal()).schedule.getHandle(scheduleId);
    try {
      return { handle, description: await handle.describe(), scheduleId };
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) {
        throw new UserFacingError(
          `no schedule '${scheduleId}' (run \`durable-fetch schedules sync\`?)`,
          'NOT_FOUND',
        );
      }
      throw err;
    }
  };

  schedules
    .command('sync')
    .description("create, update and delete Temporal Schedules to match the sources' schedule config")
    .option('--dry-run', 'print what would change, change nothing')
    .option('--json', 'print JSON')
    .action(async (opts: { dryRun?: boolean; json?: boolean }) => {
      const c = ctx();
      const changes = await syncSchedules(
        {
          temporal: await c.temporal(),
          prisma: await c.prisma(),
          taskQueue: c.config.temporal.taskQueue,
          maxFutureDays: c.config.runs.maxFutureDays,
        },
        { dryRun: opts.dryRun === true },
      );
      if (opts.json) return printJson({ dryRun: opts.dryRun === true, changes });
      const changed = changes.filter((x) => x.change !== 'unchanged');
      const verb = opts.dryRun ? 'would be' : '';
      const prefix = opts.dryRun ? '(dry run) ' : '';
      for (const x of changes) console.log(`${prefix}${x.change.padEnd(9)}  ${x.scheduleId}`);
      console.log(
        `${changed.length} schedule${changed.length === 1 ? '' : 's'} ${verb ? `${verb} ` : ''}changed, ` +
          `${changes.length - changed.length} unchanged`,
      );
    });

  schedules
    .command('list')
    .description("this deployment's schedules (its task queue's)")
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const c = ctx();
      const temporal = await c.temporal();
      const prefix = `${c.config.temporal.taskQueue}/`;
      const rows: Record<string, string>[] = [];
      const json: unknown[] = [];
      for await (const s of temporal.schedule.list()) {
        if (!s.scheduleId.startsWith(prefix)) continue;
        json.push(s);
        rows.push({
          id: s.scheduleId,
          paused: s.state.paused ? `yes: ${s.state.note ?? ''}` : 'no',
          next: iso(s.info.nextActionTimes[0]),
          last: iso(s.info.recentActions.at(-1)?.takenAt),
        });
      }
      if (opts.json) return printJson(json);
      if (rows.length === 0) return console.log('no schedules (run `durable-fetch schedules sync`)');
      console.log(table(rows, ['id', 'paused', 'next', 'last']));
    });

  schedules
    .command('describe')
    .description('one schedule: spec, policies, state, recent and next starts')
    .argument('<id>', 'source id or schedule id')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const { description, scheduleId } = await handleOf(id);
      if (opts.json) return printJson(description);
      const spec = description.spec;
      const fields: [string, string][] = [
        ['id', scheduleId],
        ['calendars', JSON.stringify(spec.calendars ?? [])],
        ['intervals', JSON.stringify(spec.intervals ?? [])],
        ['timezone', spec.timezone ?? 'UTC'],
        ['jitter', String(spec.jitter ?? '')],
        ['overlap', description.policies.overlap ?? 'SKIP'],
        ['catch-up window', `${description.policies.catchupWindow} ms`],
        ['pause on failure', String(description.policies.pauseOnFailure)],
        ['paused', description.state.paused ? `yes: ${description.state.note ?? ''}` : 'no'],
        ['recent starts', description.info.recentActions.map((a) => iso(a.scheduledAt)).join(', ')],
        ['next starts', description.info.nextActionTimes.slice(0, 3).map(iso).join(', ')],
      ];
      const width = Math.max(...fields.map(([k]) => k.length));
      for (const [k, v] of fields) console.log(`${k.padEnd(width)}  ${v}`);
    });

  schedules
    .command('pause')
    .description('stop new scheduled starts (runs in progress go on)')
    .argument('<id>', 'source id or schedule id')
    .requiredOption('--reason <text>', 'why (kept on the schedule, shown by list/describe)')
    .action(async (id: string, opts: { reason: string }) => {
      const { handle, scheduleId } = await handleOf(id);
      await handle.pause(opts.reason);
      console.log(`paused ${scheduleId}: ${opts.reason}`);
    });

  schedules
    .command('resume')
    .description('start scheduling again (starts that fell due while paused are skipped, not caught up)')
    .argument('<id>', 'source id or schedule id')
    .option('--reason <text>', 'why')
    .action(async (id: string, opts: { reason?: string }) => {
      const { handle, scheduleId } = await handleOf(id);
      await handle.unpause(opts.reason ?? 'resumed from the CLI');
      console.log(`resumed ${scheduleId}`);
    });

  schedules
    .command('trigger')
    .description("start the schedule's action now (business date: today in the source's timezone + offset)")
    .argument('<id>', 'source id or schedule id')
    .option(
      '--overlap <policy>',
      `overlap policy for this start (${OVERLAP_POLICIES.join('|')})`,
      parseOverlap,
    )
    .action(async (id: string, opts: { overlap?: ScheduleOverlapPolicy }) => {
      const { handle, scheduleId } = await handleOf(id);
      await handle.trigger(opts.overlap);
      console.log(`triggered ${scheduleId}`);
    });

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
        const { handle, description, scheduleId } = await handleOf(id);
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
