// `durable-fetch sources remove` as operators run it: refused while a run is open or an action is
// unsettled; otherwise a soft removal that deletes the schedule and keeps runs, records and audit.
// The removed source is then refused by `run`, by a claim at run time and by `sources add`, while
// compensation still loads it. Real CLI, cloned database, shared Temporal dev server.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { ScheduleNotFoundError } from '@temporalio/client';
import { loadEnabledSource, loadSource } from '../activities/sources.ts';
import { scheduleIdFor, syncSchedules } from '../client/schedules.ts';
import type { RunStatus, Source } from '../prisma/generated/client.ts';
import { assertOneLineError, detail, json, lines, ok, runCli } from './helpers/cli.ts';
import { useSourceCliEnv } from './helpers/source-cli-env.ts';

const t = useSourceCliEnv('srm');

async function seedRun(sourceId: string, date: string, status: RunStatus): Promise<string> {
  const run = await t.db.prisma.fetchRun.create({
    data: {
      jobType: 'fetch-records',
      sourceId,
      businessDate: new Date(`${date}T00:00:00Z`),
      payload: { sourceId, businessDate: date, requestedBy: 'test' },
      idempotencyKey: `fetch-records:${sourceId}:${date}`,
      status,
      attempt: 1,
      scheduledAt: new Date(),
      correlationId: randomUUID(),
      workflowId: `fetch/fetch-records/${sourceId}/${date}`,
    },
  });
  return run.id;
}

const remove = (id: string, ...args: string[]) =>
  runCli(['sources', 'remove', id, '--reason', 'contract ended', ...args], t.env);
const auditOf = (id: string) =>
  t.db.prisma.auditEntry.findMany({ where: { targetType: 'source', targetId: id }, orderBy: { at: 'asc' } });

describe('sources remove', { timeout: 300_000 }, () => {
  it('is refused while a run is open or an action unsettled, then removes softly and deletes the schedule', async () => {
    const id = 'srm-src';
    const scheduleId = scheduleIdFor(t.taskQueue, { id, jobType: 'fetch-records' });
    t.schedules.add(scheduleId);
    // Fires once a year: nothing here starts on its own.
    ok(
      await runCli(
        ['sources', 'add', id, '--job', 'fetch-records', '--base-url', 'https://x.example.test'].concat([
          '--schedule',
          '{"cron":"0 3 1 1 *"}',
          '--reason',
          'new partner',
        ]),
        t.env,
      ),
    );
    await t.client.schedule.getHandle(scheduleId).describe();

    // An open run (its workflow need not exist: the database is the system of record).
    const open = await seedRun(id, '2026-01-01', 'running');
    assertOneLineError(
      await remove(id),
      /cannot remove source 'srm-src': it has 1 open run \(queued, running or waiting to retry\)/,
    );
    await t.db.prisma.fetchRun.update({ where: { id: open }, data: { status: 'retry_wait' } });
    assertOneLineError(await remove(id), /it has 1 open run/);
    await t.db.prisma.fetchRun.update({ where: { id: open }, data: { status: 'succeeded' } });
    await t.db.prisma.fetchedRecord.create({
      data: {
        sourceId: id,
        externalId: 'r-1',
        businessDate: new Date('2026-01-01T00:00:00Z'),
        fetchRunId: open,
        data: { n: 1 },
      },
    });

    // A succeeded run's confirmed action is settled; one of unknown outcome is not.
    const action = (state: 'confirmed' | 'unknown', run: string, n: number) => ({
      fetchRunId: run,
      businessKey: `fetch-records:${id}:2026-01-0${n}`,
      key: `fetch-records:${id}:2026-01-0${n}:submit-summary:r1`,
      round: 1,
      action: 'submit-summary',
      step: 0,
      reference: `ref-${n}`,
      state,
    });
    await t.db.prisma.downstreamAction.create({ data: action('confirmed', open, 1) });
    const failed = await seedRun(id, '2026-01-02', 'dead_lettered');
    const unknown = await t.db.prisma.downstreamAction.create({ data: action('unknown', failed, 2) });
    assertOneLineError(
      await remove(id),
      /it has 1 unsettled downstream action: settle them first \(`durable-fetch compensations list`\)/,
    );
    const before = await t.db.prisma.source.findUniqueOrThrow({ where: { id } });
    assert.equal(before.removedAt, null, 'refusals changed nothing');
    assert.equal((await auditOf(id)).length, 1, 'refusals audited nothing');
    await t.db.prisma.downstreamAction.update({ where: { id: unknown.id }, data: { state: 'compensated' } });

    type Removed = { source: Source; scheduleId: string; scheduleDeleted: boolean };
    const removed = json<Removed>(await remove(id, '--by', 'erin', '--json'));
    assert.deepEqual([removed.scheduleId, removed.scheduleDeleted], [scheduleId, true]);
    const row = await t.db.prisma.source.findUniqueOrThrow({ where: { id } });
    assert.ok(row.removedAt instanceof Date);
    assert.deepEqual([row.enabled, row.removedBy], [false, 'erin']);
    await assert.rejects(t.client.schedule.getHandle(scheduleId).describe(), ScheduleNotFoundError);
    // Runs, records, ledger and audit trail are kept.
    assert.equal(await t.db.prisma.fetchRun.count({ where: { sourceId: id } }), 2);
    assert.equal(await t.db.prisma.fetchedRecord.count({ where: { sourceId: id } }), 1);
    assert.equal(await t.db.prisma.downstreamAction.count({ where: { run: { sourceId: id } } }), 2);
    const trail = await auditOf(id);
    assert.deepEqual(
      trail.map((a) => a.action),
      ['source.add', 'source.remove'],
    );
    assert.deepEqual([trail[1]!.actor, trail[1]!.reason], ['erin', 'contract ended']);
    assert.deepEqual(trail[1]!.details, {
      removedAt: row.removedAt.toISOString(),
      wasEnabled: true,
      scheduleId,
    });

    // Left out of list (unless --all) and of sync; shown as removed.
    assert.doesNotMatch(ok(await runCli(['sources', 'list'], t.env)), /^srm-src\s/m);
    assert.match(
      ok(await runCli(['sources', 'list', '--all'], t.env)),
      /^srm-src\s+fetch-records\s+no\s+removed\s/m,
    );
    assert.match(ok(await runCli(['sources', 'show', id], t.env)), /^removed\s+yes: removed \S+ by erin$/m);
    const synced = await syncSchedules({ temporal: t.client, prisma: t.db.prisma, taskQueue: t.taskQueue });
    assert.deepEqual(
      synced.filter((c) => c.sourceId === id),
      [],
    );
    await assert.rejects(t.client.schedule.getHandle(scheduleId).describe(), ScheduleNotFoundError);

    // Refused by run, add (ids are never reused), update, pause and a second remove.
    assertOneLineError(
      await runCli(['run', id, '--date', '2026-01-03'], t.env),
      /source 'srm-src' was removed \S+ by erin: it runs no more/,
    );
    assert.equal(await t.db.prisma.fetchRun.count({ where: { sourceId: id } }), 2);
    const again = await runCli(
      [
        'sources',
        'add',
        id,
        '--job',
        'fetch-records',
        '--base-url',
        'https://y.example.test',
        '--reason',
        'again',
      ],
      t.env,
    );
    assert.equal(again.code, 1, detail(again));
    assert.match(
      lines(again.stderr)[1] ?? '',
      /^ {2}<id>: source 'srm-src' was removed \S+ by erin: its id is kept .* never reused$/,
    );
    for (const args of [
      ['update', id, '--page-size', '5'],
      ['pause', id],
      ['remove', id],
    ]) {
      assertOneLineError(
        await runCli(['sources', ...args, '--reason', 'x'], t.env),
        /source 'srm-src' was removed/,
      );
    }
    assert.equal((await auditOf(id)).length, 2);
    assert.equal(
      (await t.db.prisma.source.findUniqueOrThrow({ where: { id } })).baseUrl,
      'https://x.example.test',
    );

    // At run time: a claim is refused (PermissionDenied SOURCE_REMOVED); compensation still loads it.
    await assert.rejects(
      loadEnabledSource(t.db.prisma, id),
      (err: unknown) =>
        err instanceof ApplicationFailure &&
        err.type === 'PermissionDenied' &&
        err.message.includes('was removed') &&
        (err.details?.[0] as { code?: string } | undefined)?.code === 'SOURCE_REMOVED',
    );
    assert.equal((await loadSource(t.db.prisma, id)).id, id);
  });

  it('--help of add and remove lists every option with an example', async () => {
    const noConfig = { DATABASE_URL: 'mysql://nope' };
    const wanted: Record<string, string[]> = {
      add: [
        '--job <type>',
        '--base-url <url>',
        '--name <text>',
        '--credentials-ref <NAME>',
        '--timezone <zone>',
        '--page-size <n>',
        '--retry-policy <name>',
        '--schedule <json>',
        '--config <json|@file>',
        '--submit-summary',
        '--submit-max-processing <duration>',
        '--downstream <name>',
        '--reason <text>',
        '--by <who>',
        '--json',
      ],
      remove: ['--reason <text>', '--by <who>', '--json'],
    };
    for (const [command, options] of Object.entries(wanted)) {
      const help = await runCli(['sources', command, '--help'], noConfig);
      assert.equal(help.code, 0, detail(help));
      for (const option of options)
        assert.ok(help.stdout.includes(option), `${command} --help mentions ${option}`);
      assert.match(help.stdout, new RegExp(`^Examples?:\\n {2}durable-fetch sources ${command} `, 'm'));
    }
  });
});
