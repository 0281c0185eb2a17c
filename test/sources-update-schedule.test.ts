// `durable-fetch sources update --schedule | --no-schedule | --downstream`: a source's schedule and
// downstream change from the CLI, checked as `sources add` checks them, audited as every update is,
// and its Temporal Schedule kept in line as `sources apply` keeps it (created, updated, deleted
// before the change commits). Real CLI, cloned database, shared Temporal dev server, this file's
// own task queue; source ids start with `supds-`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ScheduleNotFoundError } from '@temporalio/client';
import { desiredSchedule } from '../client/schedule-spec.ts';
import { scheduleIdFor } from '../client/schedules.ts';
import { defaultSettings, rowOf } from '../db/ledger/downstreams.ts';
import { assertOneLineError, detail, ok, runCli } from './helpers/cli.ts';
import { useSourceCliEnv } from './helpers/source-cli-env.ts';

const t = useSourceCliEnv('supds');

const update = (id: string, ...args: string[]) =>
  runCli(['sources', 'update', id, ...args, '--reason', 'ticket 40', '--by', 'erin'], t.env);
const sourceOf = (id: string) => t.db.prisma.source.findUniqueOrThrow({ where: { id } });
const auditOf = (id: string) =>
  t.db.prisma.auditEntry.findMany({ where: { targetType: 'source', targetId: id }, orderBy: { id: 'asc' } });

/** Adds source `id` of the demo job (a schedule once a year when given: nothing starts on its own). */
async function add(id: string, ...args: string[]): Promise<void> {
  ok(
    await runCli(
      [
        'sources',
        'add',
        id,
        '--job',
        'fetch-records',
        '--base-url',
        'https://a.example.test',
        ...args,
      ].concat(['--reason', 'new']),
      t.env,
    ),
  );
}

/** The source's Temporal Schedule as Temporal holds it, and the fingerprint its row wants. */
async function scheduleOf(id: string) {
  const scheduleId = scheduleIdFor(t.taskQueue, { id, jobType: 'fetch-records' });
  const described = await t.client.schedule.getHandle(scheduleId).describe();
  const wanted = desiredSchedule(await sourceOf(id), t.taskQueue, 0);
  assert.ok(!('problem' in wanted), JSON.stringify(wanted));
  const memo = (described.action as { memo?: Record<string, unknown> }).memo;
  return { described, fingerprint: memo?.durableFetchSchedule, wanted: wanted.fingerprint };
}

describe('sources update: schedule and downstream', { timeout: 300_000 }, () => {
  it('--schedule changes the row and its Temporal Schedule, audited; --disable, --enable and --no-schedule follow', async () => {
    const id = 'supds-a';
    const scheduleId = scheduleIdFor(t.taskQueue, { id, jobType: 'fetch-records' });
    t.schedules.add(scheduleId);
    await add(id, '--schedule', '{"cron":"0 3 1 1 *"}');
    const first = await scheduleOf(id);
    assert.equal(first.fingerprint, first.wanted);

    const out = ok(
      await update(
        id,
        '--schedule',
        '{"cron":"0 4 1 1 *","dateOffsetDays":-1}',
        '--timezone',
        'Europe/Paris',
      ),
    );
    assert.equal(
      out,
      `updated ${id}: timezone UTC -> Europe/Paris, schedule {"cron":"0 3 1 1 *"} -> {"cron":"0 4 1 1 *","dateOffsetDays":-1}\n` +
        `schedule ${scheduleId} updated\n`,
    );
    const row = await sourceOf(id);
    assert.deepEqual(
      [row.schedule, row.timezone],
      [{ cron: '0 4 1 1 *', dateOffsetDays: -1 }, 'Europe/Paris'],
    );
    const now = await scheduleOf(id);
    assert.equal(now.fingerprint, now.wanted, "Temporal's schedule is the one the row wants");
    assert.notEqual(now.fingerprint, first.fingerprint);
    assert.equal(now.described.spec.timezone, 'Europe/Paris');
    assert.deepEqual(
      now.described.spec.calendars?.map((c) => [c.hour, c.month]),
      [[[{ start: 4, end: 4, step: 1 }], [{ start: 'JANUARY', end: 'JANUARY', step: 1 }]]],
    );
    const action = now.described.action as { args: unknown[] };
    assert.deepEqual(action.args, [
      { sourceId: id, timeZone: 'Europe/Paris', dateOffsetDays: -1, jobType: 'fetch-records' },
    ]);
    const entry = (await auditOf(id)).at(-1)!;
    assert.deepEqual([entry.action, entry.actor, entry.reason], ['source.update', 'erin', 'ticket 40']);
    assert.deepEqual(entry.details, {
      before: { timezone: 'UTC', schedule: { cron: '0 3 1 1 *' } },
      after: { timezone: 'Europe/Paris', schedule: { cron: '0 4 1 1 *', dateOffsetDays: -1 } },
    });

    // The same schedule, spelled with its defaults or keys in another order: nothing changes.
    assert.equal(
      ok(await update(id, '--schedule', '{"dateOffsetDays":-1,"cron":"0 4 1 1 *"}')).trim(),
      `nothing changed: ${id} already has those values`,
    );
    const audited = (await auditOf(id)).length;

    // Disabled: no schedule; enabled again: its schedule is back, as the row wants it.
    assert.match(ok(await update(id, '--disable')), new RegExp(`^schedule ${scheduleId} deleted$`, 'm'));
    await assert.rejects(t.client.schedule.getHandle(scheduleId).describe(), ScheduleNotFoundError);
    assert.match(ok(await update(id, '--enable')), new RegExp(`^schedule ${scheduleId} created$`, 'm'));
    const back = await scheduleOf(id);
    assert.equal(back.fingerprint, back.wanted);

    // --no-schedule: it runs only when started, and Temporal's schedule is gone.
    assert.match(
      ok(await update(id, '--no-schedule')),
      new RegExp(`^updated ${id}: schedule \\{.*\\} -> none\\nschedule ${scheduleId} deleted\\n$`),
    );
    assert.equal((await sourceOf(id)).schedule, null);
    await assert.rejects(t.client.schedule.getHandle(scheduleId).describe(), ScheduleNotFoundError);
    assert.deepEqual((await auditOf(id)).at(-1)!.details, {
      before: { schedule: { cron: '0 4 1 1 *', dateOffsetDays: -1 } },
      after: { schedule: null },
    });
    assert.equal((await auditOf(id)).length, audited + 3);

    // A schedule for a source that had none is created.
    assert.match(
      ok(await update(id, '--schedule', '{"cron":"0 5 1 1 *"}')),
      new RegExp(`^schedule ${scheduleId} created$`, 'm'),
    );
    const created = await scheduleOf(id);
    assert.equal(created.fingerprint, created.wanted);
  });

  it('an invalid schedule or an unknown downstream is one line and changes nothing', async () => {
    const id = 'supds-bad';
    const scheduleId = scheduleIdFor(t.taskQueue, { id, jobType: 'fetch-records' });
    t.schedules.add(scheduleId);
    await add(id, '--schedule', '{"cron":"0 3 1 1 *"}');
    const row = await sourceOf(id);
    const trail = (await auditOf(id)).length;
    const { fingerprint } = await scheduleOf(id);

    assertOneLineError(
      await update(id, '--schedule', '{"cron":"0 2 * * *","dateOffsetDays":3}'),
      /^durable-fetch: invalid update of source 'supds-bad': --schedule: dateOffsetDays 3 would fetch future dates \(the future-date policy allows at most 0\)$/,
    );
    assertOneLineError(await update(id, '--schedule', '{"cron":'), /--schedule: the value is not valid JSON/);
    assertOneLineError(await update(id, '--schedule', '{"cron":"0 2 * * *","colour":1}'), /--schedule: /);
    assertOneLineError(
      await update(id, '--downstream', 'Not Ok'),
      /invalid update of source 'supds-bad': --downstream: expected a name of 1\.\.63/,
    );
    assertOneLineError(
      await update(id, '--downstream', 'acme-apii', '--page-size', '10'),
      /^durable-fetch: invalid update of source 'supds-bad': --downstream: no downstream 'acme-apii' \(known: default\): list it in a sources file's `downstreams`/,
    );
    // A cron Temporal refuses: the row is rolled back and the schedule is as it was.
    assertOneLineError(
      await update(id, '--schedule', '{"cron":"not a cron"}'),
      /^durable-fetch: source 'supds-bad': Temporal refused its schedule/,
    );

    assert.deepEqual(await sourceOf(id), row, 'nothing changed');
    assert.equal((await auditOf(id)).length, trail, 'nothing audited');
    assert.equal((await scheduleOf(id)).fingerprint, fingerprint, "Temporal's schedule unchanged");
  });

  it('--downstream moves the source to an existing downstream, audited', async () => {
    const id = 'supds-ds';
    await add(id);
    await t.db.prisma.downstream.create({
      data: { id: 'supds-api', ...rowOf(defaultSettings('supds-api')) },
    });
    assert.equal(
      ok(await update(id, '--downstream', 'supds-api')).trim(),
      `updated ${id}: downstream default -> supds-api`,
    );
    assert.equal((await sourceOf(id)).downstream, 'supds-api');
    assert.deepEqual((await auditOf(id)).at(-1)!.details, {
      before: { downstream: 'default' },
      after: { downstream: 'supds-api' },
    });
    // Back to the default downstream; no schedule is touched (it has none).
    assert.equal(
      ok(await update(id, '--downstream', 'default')).trim(),
      `updated ${id}: downstream supds-api -> default`,
    );
    assert.equal((await sourceOf(id)).downstream, 'default');
  });

  it('--help says what --schedule, --no-schedule and --downstream do', async () => {
    const help = await runCli(['sources', 'update', '--help'], { DATABASE_URL: 'mysql://nope' });
    assert.equal(help.code, 0, detail(help));
    for (const option of ['--schedule <json>', '--no-schedule', '--downstream <name>']) {
      assert.ok(help.stdout.includes(option), `update --help mentions ${option}`);
    }
    assert.match(help.stdout, /Temporal Schedule/);
    assert.match(help.stdout, /^ {2}durable-fetch sources update \S+ --schedule /m);
  });
});
