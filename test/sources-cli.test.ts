// `durable-fetch sources list|show|pause|resume|update` as operators run them: the real
// CLI as a child process against a cloned database and the shared Temporal dev server, on a task
// queue of this file's own (DURABLE_FETCH_TASK_QUEUE), so that its schedules are this file's.
// Assertions are on exit codes, output and the state left behind (source rows, audit entries,
// runs, Temporal's schedules). Source ids start with `scli-src-`: the namespace is shared.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type Client, ScheduleNotFoundError, WorkflowNotFoundError } from '@temporalio/client';
import { scheduleIdFor, syncSchedules } from '../client/schedules.ts';
import type { AuditEntry, Prisma, Source } from '../prisma/generated/client.ts';
import { assertOneLineError, assertUsageError, detail, json, lines, ok, runCli } from './helpers/cli.ts';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { temporalAddress, testClient } from './helpers/temporal.ts';

/** Nothing listens there: no test here fetches anything. */
const PARTNER_URL = 'http://127.0.0.1:9/partner';
const NO_CONFIG = { DATABASE_URL: 'mysql://nope' };

let db: TestDatabase;
let client: Client;
let taskQueue: string;
/** The CLI's environment: the test database, Temporal and this file's task queue. */
let env: Record<string, string>;
const createdSchedules = new Set<string>();

before(async () => {
  db = await useTestDatabase();
  client = await testClient();
  taskQueue = `scli-src-${randomUUID()}`;
  env = {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_TASK_QUEUE: taskQueue,
    USER: 'cli-tester',
  };
});

after(async () => {
  // Schedules outlive the test otherwise (the dev server is shared by the whole run).
  for (const id of createdSchedules) {
    await client.schedule
      .getHandle(id)
      .delete()
      .catch((err: unknown) => {
        if (!(err instanceof ScheduleNotFoundError)) throw err;
      });
  }
  await client?.connection.close();
  await db?.drop();
});

const sourceOf = (id: string) => db.prisma.source.findUniqueOrThrow({ where: { id } });
const auditOf = (id: string) =>
  db.prisma.auditEntry.findMany({
    where: { targetType: 'source', targetId: id },
    orderBy: [{ at: 'asc' }, { id: 'asc' }],
  });

/** A source row with `extra` settings (e.g. a schedule). */
async function seedSource(id: string, extra: Prisma.SourceUpdateInput = {}): Promise<void> {
  await createSource(db.prisma, id, PARTNER_URL);
  if (Object.keys(extra).length > 0) await db.prisma.source.update({ where: { id }, data: extra });
}

/** A FetchRun of `sourceId`/`date` in status running whose workflow does not exist in Temporal. */
async function seedRunningRun(sourceId: string, date: string): Promise<string> {
  const run = await db.prisma.fetchRun.create({
    data: {
      jobType: 'fetch-records',
      sourceId,
      businessDate: new Date(`${date}T00:00:00Z`),
      payload: { sourceId, businessDate: date, requestedBy: 'test' },
      idempotencyKey: `fetch-records:${sourceId}:${date}`,
      status: 'running',
      attempt: 1,
      scheduledAt: new Date(),
      startedAt: new Date(),
      correlationId: randomUUID(),
      workflowId: `fetch/fetch-records/${sourceId}/${date}`,
    },
  });
  return run.id;
}

describe('sources cli: list and show', { timeout: 300_000 }, () => {
  it('lists every source as a table or JSON, and shows one with its settings', async () => {
    await seedSource('scli-src-list-a', { schedule: { every: '1h' }, timezone: 'Europe/Paris' });
    await seedSource('scli-src-list-b', {
      submitSummary: true,
      retryPolicy: 'partnerHttpQuick',
      credentialsRef: 'DF_SECRET_SCLI_B',
      schedule: { cron: '0 2 * * *', dateOffsetDays: -1 },
    });

    const listed = ok(await runCli(['sources', 'list'], env));
    const rows = lines(listed);
    assert.match(
      rows[0]!,
      /^ID\s+JOB\s+ENABLED\s+PAUSED\s+SCHEDULE\s+BASE URL\s+PAGE SIZE\s+RETRY POLICY\s+SUBMIT SUMMARY\s+MAX RUN TIME$/,
    );
    const a = rows.find((r) => r.startsWith('scli-src-list-a '));
    const b = rows.find((r) => r.startsWith('scli-src-list-b '));
    assert.match(
      a ?? '',
      /^scli-src-list-a\s+fetch-records\s+yes\s+no\s+every 1h\s+http:\/\/127\.0\.0\.1:9\/partner\s+100\s+partnerHttp\s+no\s+24h 00m$/,
    );
    assert.match(
      b ?? '',
      /^scli-src-list-b\s+fetch-records\s+yes\s+no\s+cron 0 2 \* \* \*\s+\S+\s+100\s+partnerHttpQuick\s+yes\s+24h 00m$/,
    );

    const all = json<Source[]>(await runCli(['sources', 'list', '--json'], env));
    const listedA = all.find((s) => s.id === 'scli-src-list-a');
    assert.ok(listedA, 'list --json has the source');
    assert.deepEqual(
      [listedA.enabled, listedA.pageSize, listedA.timezone, listedA.schedule, listedA.pausedAt],
      [true, 100, 'Europe/Paris', { every: '1h' }, null],
    );

    const shown = ok(await runCli(['sources', 'show', 'scli-src-list-b'], env));
    assert.match(shown, /^id\s+scli-src-list-b$/m);
    assert.match(shown, /^paused\s+no$/m);
    assert.match(shown, /^job\s+fetch-records$/m);
    assert.match(shown, /^config\s+\{\}$/m);
    assert.match(shown, /^removed\s+no$/m);
    assert.match(shown, /^credentials ref\s+DF_SECRET_SCLI_B$/m);
    assert.match(shown, /^retry policy\s+partnerHttpQuick$/m);
    assert.match(shown, /^submit summary\s+yes$/m);
    assert.match(shown, /^schedule\s+cron 0 2 \* \* \*$/m);
    assert.match(
      shown,
      new RegExp(
        `^schedule id\\s+${scheduleIdFor(taskQueue, { id: 'scli-src-list-b', jobType: 'fetch-records' })}$`,
        'm',
      ),
    );
    assert.match(shown, /^running runs\s+0$/m);
    assert.match(shown, /^audit trail: none$/m);

    type Shown = Source & { audit: AuditEntry[]; runningRuns: number; scheduleId: string };
    const detail = json<Shown>(await runCli(['sources', 'show', 'scli-src-list-b', '--json'], env));
    assert.equal(detail.id, 'scli-src-list-b');
    assert.equal(
      detail.scheduleId,
      scheduleIdFor(taskQueue, { id: 'scli-src-list-b', jobType: 'fetch-records' }),
    );
    assert.deepEqual([detail.audit, detail.runningRuns], [[], 0]);

    assertOneLineError(await runCli(['sources', 'show', 'scli-src-nope'], env), /no source 'scli-src-nope'/);
  });
});

describe('sources cli: pause and resume', { timeout: 300_000 }, () => {
  it('pause writes the pause, audits it and pauses the schedule; runs are refused until resume', async () => {
    const id = 'scli-src-pause';
    const scheduleId = scheduleIdFor(taskQueue, { id, jobType: 'fetch-records' });
    // Fires once a year: nothing here starts on its own.
    await seedSource(id, { schedule: { cron: '0 3 1 1 *' } });
    createdSchedules.add(scheduleId);
    const synced = await syncSchedules({ temporal: client, prisma: db.prisma, taskQueue });
    assert.deepEqual(
      synced.filter((c) => c.sourceId === id),
      [{ scheduleId, sourceId: id, change: 'created' }],
    );
    const schedule = client.schedule.getHandle(scheduleId);
    assert.equal((await schedule.describe()).state.paused, false);
    // A run the database says is running; its workflow is gone from Temporal.
    await seedRunningRun(id, '2026-01-01');

    const paused = ok(
      await runCli(['sources', 'pause', id, '--reason', 'partner maintenance', '--by', 'alice'], env),
    );
    assert.equal(
      paused.trim(),
      `paused ${id}: schedule paused, 1 running run stops at its next page boundary`,
    );
    const row = await sourceOf(id);
    assert.ok(row.pausedAt instanceof Date, 'paused_at is set');
    assert.deepEqual([row.pausedReason, row.pausedBy], ['partner maintenance', 'alice']);
    const described = await schedule.describe();
    assert.deepEqual(
      [described.state.paused, described.state.note],
      [true, `paused with source ${id}: partner maintenance`],
    );
    const audit = await auditOf(id);
    assert.equal(audit.length, 1);
    assert.deepEqual(
      [audit[0]!.actor, audit[0]!.action, audit[0]!.reason],
      ['alice', 'source.pause', 'partner maintenance'],
    );
    assert.deepEqual(audit[0]!.details, { pausedAt: row.pausedAt.toISOString(), scheduleId });

    // A second pause is refused, saying since when and why; nothing changes.
    assertOneLineError(
      await runCli(['sources', 'pause', id, '--reason', 'again'], env),
      new RegExp(
        `source '${id}' is already paused since ${row.pausedAt.toISOString()} by alice \\(partner maintenance\\)`,
      ),
    );
    assert.deepEqual(await sourceOf(id), row);
    assert.equal((await auditOf(id)).length, 1);

    // New runs are refused: one line, exit 1, no run row and no workflow.
    const date = '2026-01-02';
    assertOneLineError(
      await runCli(['run', id, '--date', date], env),
      new RegExp(
        `source '${id}' is paused since ${row.pausedAt.toISOString()} \\(partner maintenance\\): resume it first`,
      ),
    );
    assert.equal(await db.prisma.fetchRun.count({ where: { sourceId: id } }), 1);
    const missing = await client.workflow
      .getHandle(`fetch/fetch-records/${id}/${date}`)
      .describe()
      .catch((e: unknown) => e);
    assert.ok(missing instanceof WorkflowNotFoundError, String(missing));

    // Shown as paused, with the audit trail.
    const shown = ok(await runCli(['sources', 'show', id], env));
    assert.match(
      shown,
      new RegExp(
        `^paused\\s+yes: paused since ${row.pausedAt.toISOString()} by alice \\(partner maintenance\\)$`,
        'm',
      ),
    );
    assert.match(shown, /^running runs\s+1$/m);
    assert.match(shown, /^\S+\s+alice\s+source\.pause\s+partner maintenance\s+\{/m);
    assert.match(
      ok(await runCli(['sources', 'list'], env)),
      new RegExp(`^${id}\\s+fetch-records\\s+yes\\s+yes: partner maintenance\\s`, 'm'),
    );

    // Resume: clears the pause, unpauses the schedule, audits; the run's workflow is gone (ignored).
    type Resumed = {
      source: Source;
      scheduleId: string;
      scheduleResumed: boolean;
      runningRuns: number;
      signalled: number;
    };
    const resumed = json<Resumed>(
      await runCli(['sources', 'resume', id, '--reason', 'partner back', '--by', 'bob', '--json'], env),
    );
    assert.deepEqual(
      [resumed.scheduleId, resumed.scheduleResumed, resumed.runningRuns, resumed.signalled],
      [scheduleId, true, 1, 0],
    );
    assert.deepEqual(
      [resumed.source.pausedAt, resumed.source.pausedReason, resumed.source.pausedBy],
      [null, null, null],
    );
    const cleared = await sourceOf(id);
    assert.deepEqual([cleared.pausedAt, cleared.pausedReason, cleared.pausedBy], [null, null, null]);
    assert.equal((await schedule.describe()).state.paused, false);
    const trail = await auditOf(id);
    assert.equal(trail.length, 2);
    assert.deepEqual(
      [trail[1]!.actor, trail[1]!.action, trail[1]!.reason],
      ['bob', 'source.resume', 'partner back'],
    );
    assert.deepEqual(trail[1]!.details, {
      pausedAt: row.pausedAt.toISOString(),
      pausedBy: 'alice',
      pausedReason: 'partner maintenance',
    });
    assertOneLineError(
      await runCli(['sources', 'resume', id], env),
      new RegExp(`source '${id}' is not paused`),
    );
    assert.equal((await auditOf(id)).length, 2);

    // Runs are accepted again (refused now only by the future-date policy, past the pause check).
    assertOneLineError(await runCli(['run', id, '--date', '2999-01-01'], env), /is in the future/);

    // Again, human output and the default actor (the OS user); the run row has ended meanwhile.
    await db.prisma.fetchRun.updateMany({ where: { sourceId: id }, data: { status: 'succeeded' } });
    assert.equal(
      ok(await runCli(['sources', 'pause', id, '--reason', 'second'], env)).trim(),
      `paused ${id}: schedule paused, no running runs`,
    );
    assert.equal((await sourceOf(id)).pausedBy, 'cli-tester');
    const again = ok(await runCli(['sources', 'resume', id], env)).trim();
    assert.match(
      again,
      new RegExp(
        `^resumed ${id}: schedule resumed, no running runs \\(was paused since \\S+ by cli-tester \\(second\\)\\)$`,
      ),
    );
    const last = (await auditOf(id)).at(-1)!;
    assert.deepEqual([last.actor, last.action, last.reason], ['cli-tester', 'source.resume', null]);
  });

  it('pauses a source without a schedule, whose schedule is then created paused; refuses bad input with one line', async () => {
    const id = 'scli-src-nosched';
    await seedSource(id);
    type Paused = { source: Source; schedulePaused: boolean; runningRuns: number };
    const paused = json<Paused>(
      await runCli(['sources', 'pause', id, '--reason', 'no data today', '--json'], env),
    );
    assert.deepEqual([paused.schedulePaused, paused.runningRuns], [false, 0]);
    assert.equal(paused.source.pausedReason, 'no data today');
    assert.equal(paused.source.pausedBy, 'cli-tester');
    await assert.rejects(
      client.schedule.getHandle(scheduleIdFor(taskQueue, { id, jobType: 'fetch-records' })).describe(),
      ScheduleNotFoundError,
    );
    // A schedule configured while the source is paused is created paused: nothing piles up.
    await db.prisma.source.update({ where: { id }, data: { schedule: { cron: '0 3 * * *' } } });
    await syncSchedules({ temporal: client, prisma: db.prisma, taskQueue });
    const created = await client.schedule
      .getHandle(scheduleIdFor(taskQueue, { id, jobType: 'fetch-records' }))
      .describe();
    assert.deepEqual(
      [created.state.paused, created.state.note],
      [true, `paused with source ${id}: no data today`],
    );
    assert.match(
      ok(await runCli(['sources', 'resume', id], env)),
      new RegExp(`^resumed ${id}: schedule resumed, no running runs`),
    );
    assert.equal(
      (await client.schedule.getHandle(scheduleIdFor(taskQueue, { id, jobType: 'fetch-records' })).describe())
        .state.paused,
      false,
    );

    assertUsageError(
      await runCli(['sources', 'pause', id], env),
      /required option '--reason <text>' not specified/,
    );
    assertOneLineError(
      await runCli(['sources', 'pause', id, '--reason', '   '], env),
      /the reason \(--reason\) must be 1\.\.1000 characters/,
    );
    assertOneLineError(
      await runCli(['sources', 'pause', id, '--reason', 'x'.repeat(1001)], env),
      /the reason \(--reason\) must be 1\.\.1000 characters/,
    );
    assertOneLineError(
      await runCli(['sources', 'pause', 'scli-src-nope', '--reason', 'x'], env),
      /no source 'scli-src-nope' \(known sources: .*scli-src-nosched/,
    );
    assertOneLineError(
      await runCli(['sources', 'resume', 'scli-src-nope'], env),
      /no source 'scli-src-nope'/,
    );
    assert.equal((await sourceOf(id)).pausedAt, null, 'refused pauses changed nothing');
    assert.equal((await auditOf(id)).length, 2);
  });
});

describe('sources cli: update', { timeout: 300_000 }, () => {
  it('changes fields with a before/after audit entry of the changed ones only', async () => {
    const id = 'scli-src-upd';
    await seedSource(id);
    const before = await sourceOf(id);
    const out = ok(
      await runCli(
        [
          'sources',
          'update',
          id,
          '--name',
          'Partner A',
          '--base-url',
          'https://partner.example.test/api',
          '--page-size',
          '250',
          '--retry-policy',
          'partnerHttpQuick',
          '--credentials-ref',
          'DF_SECRET_SCLI_UPD',
          '--timezone',
          'Europe/Paris',
          '--disable',
          '--no-submit-summary', // already so: not a change
          '--reason',
          'fix the input (ticket 42)',
          '--by',
          'carol',
        ],
        env,
      ),
    );
    assert.equal(
      out.trim(),
      `updated ${id}: name ${id} -> Partner A, baseUrl ${PARTNER_URL} -> https://partner.example.test/api, ` +
        'pageSize 100 -> 250, retryPolicy partnerHttp -> partnerHttpQuick, ' +
        'credentialsRef none -> DF_SECRET_SCLI_UPD, timezone UTC -> Europe/Paris, enabled true -> false',
    );
    const after = await sourceOf(id);
    assert.deepEqual(
      {
        name: after.name,
        baseUrl: after.baseUrl,
        pageSize: after.pageSize,
        retryPolicy: after.retryPolicy,
        credentialsRef: after.credentialsRef,
        timezone: after.timezone,
        enabled: after.enabled,
        submitSummary: after.submitSummary,
      },
      {
        name: 'Partner A',
        baseUrl: 'https://partner.example.test/api',
        pageSize: 250,
        retryPolicy: 'partnerHttpQuick',
        credentialsRef: 'DF_SECRET_SCLI_UPD',
        timezone: 'Europe/Paris',
        enabled: false,
        submitSummary: false,
      },
    );
    const [entry, ...more] = await auditOf(id);
    assert.equal(more.length, 0);
    assert.deepEqual(
      [entry!.actor, entry!.action, entry!.reason],
      ['carol', 'source.update', 'fix the input (ticket 42)'],
    );
    assert.deepEqual(entry!.details, {
      before: {
        name: id,
        baseUrl: PARTNER_URL,
        pageSize: 100,
        retryPolicy: 'partnerHttp',
        credentialsRef: null,
        timezone: 'UTC',
        enabled: true,
      },
      after: {
        name: 'Partner A',
        baseUrl: 'https://partner.example.test/api',
        pageSize: 250,
        retryPolicy: 'partnerHttpQuick',
        credentialsRef: 'DF_SECRET_SCLI_UPD',
        timezone: 'Europe/Paris',
        enabled: false,
      },
    });
    assert.ok(after.updatedAt >= before.updatedAt);

    // JSON, clearing the credentials reference and enabling again.
    type Updated = { changed: string[]; before: object; after: object; source: Source };
    const updated = json<Updated>(
      await runCli(
        ['sources', 'update', id, '--enable', '--no-credentials-ref', '--reason', 'back', '--json'],
        env,
      ),
    );
    assert.deepEqual(updated.changed, ['credentialsRef', 'enabled']);
    assert.deepEqual(updated.before, { credentialsRef: 'DF_SECRET_SCLI_UPD', enabled: false });
    assert.deepEqual(updated.after, { credentialsRef: null, enabled: true });
    assert.deepEqual([updated.source.credentialsRef, updated.source.enabled], [null, true]);
    const second = (await auditOf(id)).at(-1)!;
    assert.deepEqual([second.actor, second.action], ['cli-tester', 'source.update']);

    // The same values again change (and audit) nothing.
    assert.equal(
      ok(
        await runCli(['sources', 'update', id, '--page-size', '250', '--enable', '--reason', 'same'], env),
      ).trim(),
      `nothing changed: ${id} already has those values`,
    );
    assert.equal((await auditOf(id)).length, 2);
    // The submission's declared maximum processing time (the settle window of its lookups).
    assert.equal(
      ok(
        await runCli(
          ['sources', 'update', id, '--submit-max-processing', '5000', '--reason', 'slow partner'],
          env,
        ),
      ).trim(),
      `updated ${id}: submitMaxProcessingMs 60000 -> 5000`,
    );
    assert.equal((await sourceOf(id)).submitMaxProcessingMs, 5000);
    // Shown in the source's audit trail.
    const shown = ok(await runCli(['sources', 'show', id], env));
    assert.match(shown, /^submit max processing\s+5000 ms$/m);
    assert.match(shown, /^\S+\s+carol\s+source\.update\s+fix the input \(ticket 42\)\s+\{"after":/m);
  });

  it('rejects bad values with one line and changes nothing', async () => {
    const id = 'scli-src-bad';
    await seedSource(id);
    const before = await sourceOf(id);
    const update = (...args: string[]) => runCli(['sources', 'update', id, ...args, '--reason', 'try'], env);

    assertOneLineError(
      await update('--base-url', 'ftp://partner.example.test'),
      /--base-url: expected an http or https URL/,
    );
    assertOneLineError(await update('--base-url', 'not a url'), /--base-url: expected an http or https URL/);
    const withSecret = await update('--base-url', 'https://user:hunter2@partner.example.test');
    assertOneLineError(withSecret, /--base-url: must not carry credentials/);
    assert.doesNotMatch(withSecret.stderr, /hunter2/, 'the secret is not echoed');
    assertOneLineError(await update('--page-size', '0'), /--page-size: expected an integer 1\.\.1000/);
    assertOneLineError(await update('--page-size', '1001'), /--page-size: expected an integer 1\.\.1000/);
    assertOneLineError(await update('--page-size', 'ten'), /--page-size: expected an integer 1\.\.1000/);
    assertOneLineError(
      await update('--retry-policy', 'database'),
      /--retry-policy: expected one of partnerHttp, partnerHttpQuick/,
    );
    assertOneLineError(
      await update('--timezone', 'Mars/Olympus_Mons'),
      /--timezone: expected an IANA timezone/,
    );
    assertOneLineError(
      await update('--credentials-ref', 'DATABASE_URL'),
      /--credentials-ref: expected the NAME of a DF_SECRET_\* variable/,
    );
    assertOneLineError(await update('--name', '  '), /--name: must be 1\.\.200 characters/);
    for (const bad of ['-1', '86400001', 'soon']) {
      assertOneLineError(
        await update('--submit-max-processing', bad),
        /--submit-max-processing: expected milliseconds 0\.\.86400000/,
      );
    }
    // Every invalid value is named, and a valid one next to them is not applied either.
    const several = await update('--page-size', '0', '--timezone', 'Nowhere/Special', '--name', 'fine');
    assertOneLineError(several, /--page-size: .*; --timezone: /);
    assertOneLineError(
      await runCli(['sources', 'update', id, '--reason', 'nothing'], env),
      /nothing to update: give at least one of --name/,
    );
    assertOneLineError(
      await runCli(['sources', 'update', 'scli-src-nope', '--page-size', '10', '--reason', 'x'], env),
      /no source 'scli-src-nope'/,
    );
    assertUsageError(
      await runCli(['sources', 'update', id, '--enable', '--disable', '--reason', 'x'], env),
      /cannot be used with/,
    );
    assertUsageError(
      await runCli(['sources', 'update', id, '--page-size', '10'], env),
      /required option '--reason <text>' not specified/,
    );

    assert.deepEqual(await sourceOf(id), before, 'nothing changed');
    assert.equal((await auditOf(id)).length, 0, 'nothing audited');
  });

  it('--help of each command needs no configuration', async () => {
    const help = await runCli(['sources', '--help'], NO_CONFIG);
    assert.equal(help.code, 0, detail(help));
    for (const command of ['list', 'show', 'add', 'remove', 'pause', 'resume', 'update']) {
      assert.match(help.stdout, new RegExp(`^\\s+${command}\\b`, 'm'), `sources --help lists ${command}`);
    }
    assert.match(help.stdout, /next page\s+boundary/);
    const options: Record<string, string[]> = {
      list: ['--all', '--json'],
      show: ['--json'],
      pause: ['--reason <text>', '--by <who>', '--json'],
      resume: ['--reason <text>', '--by <who>', '--json'],
      update: [
        '--name <text>',
        '--base-url <url>',
        '--page-size <n>',
        '--retry-policy <name>',
        '--credentials-ref <NAME>',
        '--no-credentials-ref',
        '--timezone <zone>',
        '--enable',
        '--disable',
        '--submit-summary',
        '--no-submit-summary',
        '--submit-max-processing <ms>',
        '--config <json|@file>',
        '--reason <text>',
        '--by <who>',
        '--json',
      ],
    };
    for (const [command, wanted] of Object.entries(options)) {
      const sub = await runCli(['sources', command, '--help'], NO_CONFIG);
      assert.equal(sub.code, 0, detail(sub));
      assert.match(sub.stdout, new RegExp(`^Usage: durable-fetch sources ${command} \\[options\\]`));
      for (const option of wanted)
        assert.ok(sub.stdout.includes(option), `${command} --help mentions ${option}`);
    }
  });
});
