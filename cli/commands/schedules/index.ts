/**
 * `durable-fetch schedules`: the command group and its help text, `sync`, and the commands that
 * read or steer one schedule (list, describe, pause, resume, trigger). `backfill` lives in
 * schedules-backfill.ts and is registered last, so `schedules --help` lists them as before.
 */
import type { Command } from 'commander';
import type { ScheduleOverlapPolicy } from '@temporalio/client';
import type { CliContext } from '../../context.ts';
import { table } from '../../../client/format.ts';
import { OVERLAP_POLICIES } from '../../../client/overlap-policies.ts';
import { printJson } from '../output.ts';
import { parseOverlap, scheduleOf } from './args.ts';
import { registerSchedulesBackfill } from './backfill.ts';

const SCHEDULING_HELP = `
A source runs on its own when its "schedule" (a JSON column of the source row) says when, e.g.
  {"cron": "0 2 * * *", "dateOffsetDays": -1, "overlap": "skip", "catchupWindow": "1d"}
  {"every": "1h", "jitter": "5m", "pauseOnFailure": true}
"schedules sync" makes Temporal's Schedules match; npm start runs it on boot. A scheduled run's
business date is the schedule's nominal time in the source's timezone plus dateOffsetDays (a daily
02:00 run with -1 fetches the previous day). <id> is a source id or a schedule id
(<taskQueue>/<job>/<source>; a schedule sync has not migrated yet keeps its old id,
<taskQueue>/fetch-records/<source>, and a source id finds it there).`;

const iso = (d: Date | undefined) => d?.toISOString() ?? '';

/** `durable-fetch schedules sync|list|describe|pause|resume|trigger|backfill` */
export function registerSchedules(program: Command, ctx: () => CliContext): void {
  const schedules = program
    .command('schedules')
    .description("Temporal Schedules of the sources (kept in line with each source's schedule config)")
    .addHelpText('after', SCHEDULING_HELP);

  schedules
    .command('sync')
    .description(
      "create, update, migrate (from an old id) and delete Temporal Schedules to match the sources' schedule config",
    )
    .option('--dry-run', 'print what would change, change nothing')
    .option('--json', 'print JSON')
    .action(async (opts: { dryRun?: boolean; json?: boolean }) => {
      const c = ctx();
      const { syncSchedules } = await import('../../../client/schedules.ts');
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
      for (const x of changes) {
        const from = x.from === undefined ? '' : ` (from ${x.from})`;
        console.log(`${prefix}${x.change.padEnd(9)}  ${x.scheduleId}${from}`);
      }
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
      const { description, scheduleId } = await scheduleOf(ctx, id);
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
      const { handle, scheduleId } = await scheduleOf(ctx, id);
      await handle.pause(opts.reason);
      console.log(`paused ${scheduleId}: ${opts.reason}`);
    });

  schedules
    .command('resume')
    .description('start scheduling again (starts that fell due while paused are skipped, not caught up)')
    .argument('<id>', 'source id or schedule id')
    .option('--reason <text>', 'why')
    .action(async (id: string, opts: { reason?: string }) => {
      const { handle, scheduleId } = await scheduleOf(ctx, id);
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
      const { handle, scheduleId } = await scheduleOf(ctx, id);
      await handle.trigger(opts.overlap);
      console.log(`triggered ${scheduleId}`);
    });

  registerSchedulesBackfill(schedules, ctx);
}
