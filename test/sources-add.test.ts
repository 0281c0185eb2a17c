// `durable-fetch sources add` and `sources update --config` as operators run them: the real CLI
// against a cloned database and the shared Temporal dev server, on this file's own task queue.
// Assertions are on exit codes, output and the state left behind (source rows, audit entries,
// Temporal's schedules). Source ids start with `sadd-`: the namespace is shared.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { createJobRegistry } from '../activities/job-api/registry.ts';
import { scheduleIdFor, syncSchedules } from '../client/schedules.ts';
import { addSource } from '../client/sources/index.ts';
import { fetchRecordsJob } from '../jobs/fetch-records/index.ts';
import { isUserFacingError } from '../runtime/errors.ts';
import { detail, json, lines, ok, runCli } from './helpers/cli.ts';
import { literal, registeredJobTypes } from './helpers/job-types.ts';
import { useSourceCliEnv } from './helpers/source-cli-env.ts';

const t = useSourceCliEnv('sadd');
const add = (id: string, ...args: string[]) =>
  runCli(['sources', 'add', id, ...args, '--reason', 'new partner', '--by', 'dana'], t.env);
const counts = async () => [await t.db.prisma.source.count(), await t.db.prisma.auditEntry.count()];
const auditOf = (id: string) =>
  t.db.prisma.auditEntry.findMany({ where: { targetType: 'source', targetId: id }, orderBy: { at: 'asc' } });

describe('sources add', { timeout: 300_000 }, () => {
  it('reports every problem at once, one per line, and writes nothing', async () => {
    const before = await counts();
    const result = await add(
      'Bad ID!',
      ...['--job', 'nope', '--base-url', 'https://user:hunter2@partner.example.test'],
      ...['--credentials-ref', 'sk_live_123', '--timezone', 'Mars/Olympus_Mons', '--page-size', '0'],
      ...['--retry-policy', 'database', '--schedule', '{"cron":"0 2 * * *","dateOffsetDays":3}'],
      ...['--config', '{"account":', '--submit-max-processing', 'soon', '--downstream', 'Not Ok'],
    );
    assert.equal(result.code, 1, detail(result));
    assert.equal(result.stdout, '');
    assert.doesNotMatch(result.stderr, /hunter2/, 'the secret in the URL is not echoed');
    const errLines = lines(result.stderr);
    assert.equal(errLines[0], "durable-fetch: cannot add source 'Bad ID!':");
    const expected = [
      /^ {2}<id>: invalid source id 'Bad ID!'/,
      /^ {2}--base-url: must not carry credentials/,
      /^ {2}--page-size: expected an integer 1\.\.1000$/,
      /^ {2}--retry-policy: expected one of partnerHttp, partnerHttpQuick$/,
      /^ {2}--credentials-ref: expected the NAME of a DF_SECRET_\* variable/,
      /^ {2}--timezone: expected an IANA timezone/,
      /^ {2}--submit-max-processing: expected milliseconds 0\.\.86400000$/,
      new RegExp(
        `^ {2}--job: unknown job type 'nope' \\(known: ${literal(registeredJobTypes().join(', '))}\\)$`,
      ),
      /^ {2}--downstream: expected a name/,
      /^ {2}--schedule: dateOffsetDays 3 would fetch future dates \(the future-date policy allows at most 0\)$/,
      /^ {2}--config: the value is not valid JSON: /,
    ];
    assert.equal(errLines.length, 1 + expected.length, detail(result));
    for (const re of expected)
      assert.ok(
        errLines.some((l) => re.test(l)),
        `${re} in\n${result.stderr}`,
      );
    assert.deepEqual(await counts(), before, 'no source and no audit entry written');

    // The job's own schema judges the config; a bad schedule shape is named; the id is free.
    const job = await add(
      'sadd-bad-config',
      ...['--job', 'exchange-rates', '--base-url', 'ftp://x.example.test'],
      ...['--config', '{"account":"","extra":1}', '--schedule', '{"cron":"0 2 * * *","every":"1h"}'],
    );
    assert.equal(job.code, 1, detail(job));
    assert.deepEqual(lines(job.stderr).slice(1).sort(), [
      '  --base-url: expected an http or https URL',
      '  --config: config.account: Too small: expected string to have >=1 characters',
      '  --config: config: Unrecognized key: "extra"',
      '  --schedule: give exactly one of "cron" or "every"',
    ]);
    const file = await add(
      'sadd-nofile',
      '--job',
      'fetch-records',
      '--base-url',
      'https://x.example.test',
      '--config',
      '@/nonexistent/c.json',
    );
    assert.match(file.stderr, /^ {2}--config: cannot read file '\/nonexistent\/c\.json' \(ENOENT\)$/m);
    const demo = await add(
      'sadd-demo-config',
      '--job',
      'fetch-records',
      '--base-url',
      'https://x.example.test',
      '--config',
      '{"a":1}',
    );
    assert.match(demo.stderr, /^ {2}--config: config: job 'fetch-records' takes no config$/m);
    assert.deepEqual(await counts(), before, 'still nothing written');
  });

  it('adds a source of each job with its parsed config and an audit entry naming the fields set', async () => {
    const out = ok(
      await add(
        'sadd-demo',
        '--job',
        'fetch-records',
        '--base-url',
        'https://demo.example.test/api',
        '--credentials-ref',
        'DF_SECRET_SADD',
      ),
    );
    assert.equal(
      out.trim(),
      'added sadd-demo (job fetch-records): https://demo.example.test/api, no schedule\nconfig {}',
    );
    const demo = await t.db.prisma.source.findUniqueOrThrow({ where: { id: 'sadd-demo' } });
    assert.deepEqual(
      [
        demo.jobType,
        demo.config,
        demo.name,
        demo.credentialsRef,
        demo.timezone,
        demo.pageSize,
        demo.schedule,
      ],
      ['fetch-records', {}, 'sadd-demo', 'DF_SECRET_SADD', 'UTC', 1000, null],
    );
    const [entry, ...more] = await auditOf('sadd-demo');
    assert.equal(more.length, 0);
    assert.deepEqual([entry!.actor, entry!.action, entry!.reason], ['dana', 'source.add', 'new partner']);
    assert.deepEqual(entry!.details, {
      set: {
        id: 'sadd-demo',
        name: 'sadd-demo',
        baseUrl: 'https://demo.example.test/api',
        jobType: 'fetch-records',
        credentialsRef: 'DF_SECRET_SADD',
        config: {},
      },
      scheduleId: null,
    });

    // exchange-rates: a config file with one account; the other takes its default.
    const dir = await mkdtemp(path.join(tmpdir(), 'sadd-'));
    const configFile = path.join(dir, 'fx.json');
    await writeFile(configFile, '{"account":"fx:ecb"}');
    type Added = { source: { config: unknown; submitSummary: boolean; submitMaxProcessingMs: number } };
    const added = json<Added>(
      await add(
        'sadd-fx',
        '--job',
        'exchange-rates',
        '--base-url',
        'https://fx.example.test',
        '--config',
        `@${configFile}`,
        '--submit-summary',
        '--submit-max-processing',
        '90s',
        '--json',
      ),
    );
    const stored = { account: 'fx:ecb', counterAccount: 'fx:suspense' };
    assert.deepEqual(added.source.config, stored);
    const fx = await t.db.prisma.source.findUniqueOrThrow({ where: { id: 'sadd-fx' } });
    assert.deepEqual(
      [fx.jobType, fx.config, fx.submitSummary, fx.submitMaxProcessingMs],
      ['exchange-rates', stored, true, 90_000],
    );
    assert.match(
      ok(await runCli(['sources', 'show', 'sadd-fx'], t.env)),
      /^config\s+\{"account":"fx:ecb","counterAccount":"fx:suspense"\}$/m,
    );
    assert.match(
      ok(await runCli(['sources', 'list'], t.env)),
      /^sadd-fx\s+exchange-rates\s+yes\s+no\s+none\s/m,
    );

    const again = await add('sadd-fx', '--job', 'exchange-rates', '--base-url', 'https://fx.example.test');
    assert.match(again.stderr, /^ {2}<id>: source 'sadd-fx' already exists$/m);
    assert.equal((await auditOf('sadd-fx')).length, 1);
  });

  it('refuses --submit-summary for a job without a downstream action', async () => {
    const { downstream: _unused, ...withoutAction } = fetchRecordsJob;
    const jobs = createJobRegistry([{ ...withoutAction, type: 'no-action' }]);
    const ctx = { prisma: t.db.prisma, temporal: t.client, taskQueue: t.taskQueue, jobs };
    const input = { id: 'sadd-noaction', jobType: 'no-action', baseUrl: 'https://x.example.test' };
    await assert.rejects(
      addSource(ctx, { ...input, submitSummary: true }, { actor: 'dana', reason: 'x' }),
      (err: unknown) =>
        isUserFacingError(err) &&
        err.code === 'INVALID_INPUT' &&
        /--submit-summary: job 'no-action' has no downstream action/.test(err.message),
    );
    assert.equal(await t.db.prisma.source.count({ where: { id: 'sadd-noaction' } }), 0);
    const added = await addSource(ctx, input, { actor: 'dana', reason: 'x' });
    assert.deepEqual([added.source.jobType, added.source.submitSummary], ['no-action', false]);
  });

  it('with --schedule creates the Temporal Schedule as schedules sync would', async () => {
    const id = 'sadd-sched';
    const scheduleId = scheduleIdFor(t.taskQueue, { id, jobType: 'exchange-rates' });
    t.schedules.add(scheduleId);
    // Fires once a year: nothing here starts on its own.
    const out = ok(
      await add(
        id,
        '--job',
        'exchange-rates',
        '--base-url',
        'https://fx.example.test',
        '--timezone',
        'Europe/Paris',
        '--schedule',
        '{"cron":"0 3 1 1 *","dateOffsetDays":-1}',
      ),
    );
    assert.match(out, new RegExp(`schedule cron 0 3 1 1 \\* \\(${scheduleId} created\\)`));
    const described = await t.client.schedule.getHandle(scheduleId).describe();
    assert.equal(described.spec.timezone, 'Europe/Paris');
    assert.equal(described.state.paused, false);
    const action = described.action as { workflowType: string; taskQueue: string; args: unknown[] };
    assert.deepEqual([action.workflowType, action.taskQueue], ['scheduledFetchWorkflow', t.taskQueue]);
    assert.deepEqual(action.args, [
      { jobType: 'exchange-rates', sourceId: id, timeZone: 'Europe/Paris', dateOffsetDays: -1 },
    ]);
    // One builder: sync finds nothing to change.
    const synced = await syncSchedules({ temporal: t.client, prisma: t.db.prisma, taskQueue: t.taskQueue });
    assert.deepEqual(
      synced.filter((c) => c.sourceId === id),
      [{ scheduleId, sourceId: id, change: 'unchanged' }],
    );
    const [entry] = await auditOf(id);
    assert.equal((entry!.details as { scheduleId: string }).scheduleId, scheduleId);

    // A cron Temporal refuses: no source, no audit entry, no schedule.
    const bad = await add(
      'sadd-badcron',
      '--job',
      'fetch-records',
      '--base-url',
      'https://x.example.test',
      '--schedule',
      '{"cron":"not a cron"}',
    );
    assert.equal(bad.code, 1, detail(bad));
    assert.match(bad.stderr, /source 'sadd-badcron': Temporal refused its schedule/);
    assert.equal(await t.db.prisma.source.count({ where: { id: 'sadd-badcron' } }), 0);
    assert.equal((await auditOf('sadd-badcron')).length, 0);
  });
});
