// `durable-fetch sources apply -f` as operators run it, in process (test/helpers/cli-in-process.ts)
// against a cloned database and the shared Temporal dev server, on this file's own task queue.
// Assertions are on exit codes, output and the state left behind: source rows, audit entries,
// Temporal's schedules. Source ids start with `sapply-`: the namespace is shared. Pruning, the
// defaults and the example file: test/sources-apply-prune.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ScheduleNotFoundError } from '@temporalio/client';
import { desiredSchedule } from '../client/schedule-spec.ts';
import { scheduleIdFor } from '../client/schedules.ts';
import { SOURCE_DEFAULTS } from '../client/sources/file-schema.ts';
import { cells, detail, json, lines, ok } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { useSourceCliEnv } from './helpers/source-cli-env.ts';
import { type ApplyJson as Report, tempFile as file } from './helpers/source-files.ts';

const t = useSourceCliEnv('sapply');

const apply = (f: string, ...args: string[]) =>
  runCliInProcess(['sources', 'apply', '-f', f, '--by', 'dana', ...args], t.env);
const counts = async () => ({
  sources: await t.db.prisma.source.count(),
  audit: await t.db.prisma.auditEntry.count(),
});
const auditOf = (id: string) =>
  t.db.prisma.auditEntry.findMany({ where: { targetType: 'source', targetId: id }, orderBy: { id: 'asc' } });

// Once a year: nothing here starts on its own.
const SOURCES = `# yaml-language-server: $schema=../sources.schema.json
sources:
  - id: sapply-a
    baseUrl: https://a.example.test/api
    submitSummary: true
    schedule: { cron: '0 3 1 1 *' }
  - id: sapply-fx
    job: exchange-rates
    baseUrl: https://fx.example.test
    credentialsRef: DF_SECRET_SAPPLY_FX
    pageSize: 25
    config: { account: 'fx:ecb' }
`;

describe('sources apply', { timeout: 300_000 }, () => {
  it('a dry run changes nothing; apply creates, audited; applying again changes and audits nothing', async () => {
    const f = await file('sources.yaml', SOURCES);
    const scheduleId = scheduleIdFor(t.taskQueue, { id: 'sapply-a', jobType: 'fetch-records' });
    t.schedules.add(scheduleId);
    const before = await counts();
    assert.deepEqual(lines(ok(await apply(f, '--dry-run'))).map(cells), [
      ['SOURCE', 'ACTION', 'FIELDS'],
      ['sapply-a', 'create', 'baseUrl, submitSummary, schedule'],
      ['sapply-fx', 'create', 'job, baseUrl, credentialsRef, pageSize, config'],
      [`dry run of ${f}: 2 to create, 0 to update, 0 unchanged, 0 to remove; nothing was changed`],
    ]);
    assert.deepEqual(await counts(), before, 'no row and no audit entry written');
    await assert.rejects(t.client.schedule.getHandle(scheduleId).describe(), ScheduleNotFoundError);

    const applied = json<Report>(await apply(f, '--json', '--reason', 'partners kept in git'));
    assert.deepEqual(
      applied.changes.map((c) => [c.id, c.action]),
      [
        ['sapply-a', 'create'],
        ['sapply-fx', 'create'],
      ],
    );
    assert.deepEqual(applied.schedules, [{ scheduleId, sourceId: 'sapply-a', change: 'created' }]);
    await t.client.schedule.getHandle(scheduleId).describe();
    const fx = await t.db.prisma.source.findUniqueOrThrow({ where: { id: 'sapply-fx' } });
    assert.deepEqual(
      [fx.name, fx.jobType, fx.pageSize, fx.credentialsRef, fx.schedule, fx.config],
      [
        'sapply-fx',
        'exchange-rates',
        25,
        'DF_SECRET_SAPPLY_FX',
        null,
        { account: 'fx:ecb', counterAccount: 'fx:suspense' },
      ],
    );
    const [added, ...more] = await auditOf('sapply-a');
    assert.equal(more.length, 0);
    assert.deepEqual(
      [added!.action, added!.actor, added!.reason],
      ['source.add', 'dana', 'partners kept in git'],
    );
    assert.deepEqual(added!.details, {
      set: {
        id: 'sapply-a',
        name: 'sapply-a',
        baseUrl: 'https://a.example.test/api',
        jobType: 'fetch-records',
        submitSummary: true,
        config: {},
        schedule: { cron: '0 3 1 1 *' },
      },
      scheduleId,
    });
    assert.deepEqual(await counts(), { sources: before.sources + 2, audit: before.audit + 2 });

    const again = ok(await apply(f));
    assert.match(again, /^sapply-a\s+unchanged$/m);
    assert.match(again, /^sapply-fx\s+unchanged$/m);
    assert.match(again, /: 0 created, 0 updated, 2 unchanged, 0 removed; schedules: none changed\n$/);
    assert.deepEqual(await counts(), { sources: before.sources + 2, audit: before.audit + 2 });
  });

  it('an edit updates only what differs, audited with before and after; a JSON file works the same', async () => {
    const source = (extra: object) => ({ id: 'sapply-fx', job: 'exchange-rates', ...extra });
    const fx = { baseUrl: 'https://fx.example.test', credentialsRef: 'DF_SECRET_SAPPLY_FX' };
    const a = { id: 'sapply-a', baseUrl: 'https://a.example.test/api', submitSummary: true };
    const edited = await file(
      'edited.json',
      JSON.stringify({
        sources: [
          { ...a, schedule: { cron: '0 4 1 1 *' } },
          // Config keys in another order, one default spelled out: the same config.
          source({ ...fx, pageSize: 50, config: { counterAccount: 'fx:suspense', account: 'fx:ecb' } }),
        ],
      }),
    );
    const auditBefore = (await auditOf('sapply-fx')).length;
    const report = json<Report>(await apply(edited, '--json'));
    assert.deepEqual(
      report.changes.map((c) => [c.id, c.action, c.fields]),
      [
        ['sapply-a', 'update', ['schedule']],
        ['sapply-fx', 'update', ['pageSize']],
      ],
    );
    const scheduleId = scheduleIdFor(t.taskQueue, { id: 'sapply-a', jobType: 'fetch-records' });
    assert.deepEqual(report.schedules, [{ scheduleId, sourceId: 'sapply-a', change: 'updated' }]);
    const trail = await auditOf('sapply-fx');
    assert.equal(trail.length, auditBefore + 1);
    assert.deepEqual(
      [trail.at(-1)!.action, trail.at(-1)!.reason],
      ['source.update', `sources apply -f ${edited}`],
    );
    assert.deepEqual(trail.at(-1)!.details, { before: { pageSize: 25 }, after: { pageSize: 50 } });

    // A setting the file leaves out is its default again (the file is the whole truth).
    const fewer = await file(
      'fewer.yaml',
      `sources:\n  - id: sapply-a\n    baseUrl: ${a.baseUrl}\n    schedule: { cron: '0 4 1 1 *' }\n`,
    );
    const reset = json<Report>(await apply(fewer, '--json'));
    assert.deepEqual(reset.changes, [{ id: 'sapply-a', action: 'update', fields: ['submitSummary'] }]);
    assert.deepEqual((await auditOf('sapply-a')).at(-1)!.details, {
      before: { submitSummary: true },
      after: { submitSummary: SOURCE_DEFAULTS.submitSummary },
    });
  });

  it('refuses a bad file (one line per problem, with its path) and a job type change, changing nothing', async () => {
    const before = await counts();
    const bad = await file(
      'bad.yaml',
      [
        'sources:',
        '  - id: sapply-new',
        '    baseUrl: https://n.example.test',
        '    pageSize: 0',
        '    colour: blue',
        '  - id: sapply-fx2',
        '    job: exchange-rates',
        '    baseUrl: https://fx.example.test',
        "    config: { account: '', extra: 1 }",
        '  - id: sapply-new',
        '    baseUrl: https://n.example.test',
        '',
      ].join('\n'),
    );
    const result = await apply(bad);
    assert.equal(result.code, 1, detail(result));
    assert.equal(result.stdout, '');
    assert.deepEqual(lines(result.stderr), [
      `durable-fetch: ${bad}: 5 problems, nothing was changed:`,
      `${bad}: sources[0].colour: unknown key (expected: id, job, name, baseUrl, credentialsRef, timezone, pageSize, retryPolicy, downstream, submitSummary, submitMaxProcessingMs, maxRunTimeMs, localFetch, enabled, schedule, config)`,
      `${bad}: sources[0].pageSize: expected an integer 1..1000`,
      `${bad}: sources[1].config.account: Too small: expected string to have >=1 characters`,
      `${bad}: sources[1].config: Unrecognized key: "extra"`,
      `${bad}: sources[2].id: duplicate id 'sapply-new' (also sources[0])`,
    ]);
    const syntax = await apply(await file('syntax.yaml', 'sources:\n  - id: sapply-x\n    baseUrl: "oops\n'));
    assert.equal(syntax.code, 1, detail(syntax));
    assert.match(lines(syntax.stderr)[1] ?? '', /syntax\.yaml:\d+:\d+: .*quote/i, detail(syntax));

    const job = await apply(
      await file(
        'job.yaml',
        'sources:\n  - id: sapply-a\n    job: exchange-rates\n    baseUrl: https://a.example.test\n',
      ),
    );
    assert.equal(job.code, 1, detail(job));
    assert.match(
      lines(job.stderr)[1] ?? '',
      /job\.yaml: sources\[0\]\.job: the job type of source 'sapply-a' cannot change from 'fetch-records' to 'exchange-rates'/,
    );
    assert.deepEqual(await counts(), before, 'nothing written');
  });

  it('a schedule Temporal refuses changes nothing, and puts back the schedules already synced', async () => {
    const before = await counts();
    const scheduleId = scheduleIdFor(t.taskQueue, { id: 'sapply-a', jobType: 'fetch-records' });
    const fingerprint = async () => {
      const d = await t.client.schedule.getHandle(scheduleId).describe();
      return (d.action as { memo?: Record<string, unknown> }).memo?.durableFetchSchedule;
    };
    const row = await t.db.prisma.source.findUniqueOrThrow({ where: { id: 'sapply-a' } });
    const committed = desiredSchedule(row, t.taskQueue, 0);
    assert.ok(!('problem' in committed));
    assert.equal(await fingerprint(), committed.fingerprint);
    t.schedules.add(scheduleIdFor(t.taskQueue, { id: 'sapply-badcron', jobType: 'fetch-records' }));
    const f = await file(
      'badcron.yaml',
      [
        'sources:',
        '  - id: sapply-a',
        '    baseUrl: https://a.example.test/api',
        "    schedule: { cron: '0 5 1 1 *' }",
        '  - id: sapply-badcron',
        '    baseUrl: https://b.example.test',
        "    schedule: { cron: 'not a cron' }",
        '',
      ].join('\n'),
    );
    const result = await apply(f);
    assert.equal(result.code, 1, detail(result));
    assert.match(result.stderr, /^durable-fetch: source 'sapply-badcron': Temporal refused its schedule/);
    assert.deepEqual(await counts(), before, 'no row and no audit entry written');
    const now = await t.db.prisma.source.findUniqueOrThrow({ where: { id: 'sapply-a' } });
    assert.deepEqual(now.schedule, row.schedule);
    // sapply-a's schedule had been updated inside the transaction: it is the committed one again.
    assert.equal(await fingerprint(), committed.fingerprint);
  });
});
