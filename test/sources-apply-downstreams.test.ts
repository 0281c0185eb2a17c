// R8's downstream settings kept in the sources file: `sources validate` refuses impossible settings
// with one line naming each, `sources apply` makes the `downstream` table match the file's list in
// the same transaction as the sources (audited, before and after), leaves it alone for a file
// without the list, and refuses to move a downstream's task queue under live runs. In process,
// against this file's own cloned database and the shared Temporal dev server. Ids start `sds-`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findDownstream } from '../db/ledger/downstreams.ts';
import { cells, detail, json, lines, ok } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { useSourceCliEnv } from './helpers/source-cli-env.ts';
import { seedOpenRun, tempFile } from './helpers/source-files.ts';

const t = useSourceCliEnv('sds');
type QueueJson = {
  downstream: string;
  taskQueue: string;
  applied: boolean;
  config?: { queueLimit?: { perSecond: number } };
};
const cli = (...args: string[]) => runCliInProcess(args, t.env);
const apply = (f: string, ...args: string[]) => cli('sources', 'apply', '-f', f, '--by', 'erin', ...args);
const source = (id: string, downstream: string) =>
  `  - id: ${id}\n    baseUrl: https://${id}.example.test\n    downstream: ${downstream}\n`;

describe('sources file: downstreams (R8)', { timeout: 300_000 }, () => {
  it('validate: each impossible setting is refused with one line naming it (threshold over 1, empty window, zero rate, a limit on a shared queue, a typo)', async () => {
    const file = await tempFile(
      'bad-ds.yaml',
      `sources:\n${source('sds-a', 'sds-partnr')}downstreams:\n` +
        '  - id: sds-partner\n' +
        '    isolated: true\n' +
        '    callsPerSecond: 0\n' +
        '    breaker: { failureRate: 1.5, windowMs: 0 }\n' +
        '    retryBudget: { ratio: 0.2, minRetries: -1, spare: 3 }\n' +
        '  - id: sds-partner\n    sourceCallsPerSecond: 2\n',
    );
    const run = await cli('sources', 'validate', '-f', file);
    assert.equal(run.code, 1, detail(run));
    const problems = lines(run.stderr).slice(1);
    assert.deepEqual(
      problems.sort(),
      [
        `${file}: downstreams[0].breaker.failureRate: must be at most 1 (a share of the calls)`,
        `${file}: downstreams[0].breaker.windowMs: must be at least 1000 ms`,
        `${file}: downstreams[0].callsPerSecond: must be above 0 (leave it out for no limit)`,
        `${file}: downstreams[0].retryBudget: Unrecognized key: "spare"`,
        `${file}: downstreams[0].retryBudget.minRetries: must be at least 1`,
        `${file}: downstreams[1].sourceCallsPerSecond: applies only to an isolated downstream (a task queue of its own): set isolated: true, or leave it out`,
        `${file}: sources[0].downstream: 'sds-partnr' is not in the file's downstreams (list it there, or leave \`downstreams\` out to keep the table as it is)`,
      ].sort(),
    );
    assert.equal(await t.db.prisma.downstream.count(), 0);
  });

  it('apply: creates, updates only what differs, removes what the list leaves out, each audited; a file without the list keeps the table', async () => {
    const v1 = await tempFile(
      'ds1.yaml',
      `sources:\n${source('sds-one', 'sds-api')}downstreams:\n` +
        '  - id: sds-api\n    isolated: true\n    callsPerSecond: 20\n    breaker: { openMs: 5000 }\n' +
        '  - id: sds-old\n',
    );
    const validated = await cli('sources', 'validate', '-f', v1);
    ok(validated);
    assert.equal(validated.stdout.trim(), 'ok: 1 source, 2 downstreams');
    const first = await apply(v1, '--json');
    ok(first);
    const report = json<{ downstreams: unknown[]; queues: QueueJson[] }>(first);
    assert.deepEqual(report.downstreams, [
      { id: 'sds-api', action: 'create', fields: ['isolated', 'callsPerSecond', 'breakerOpenMs'] },
      { id: 'sds-old', action: 'create', fields: [] },
    ]);
    // Once committed, the isolated downstream's limit is Temporal's, on its own task queue.
    assert.deepEqual(
      report.queues.map((q) => [q.downstream, q.taskQueue, q.applied, q.config?.queueLimit?.perSecond]),
      [['sds-api', `${t.taskQueue}-ds-sds-api`, true, 20]],
    );
    const shown = await cli('breakers', 'show', 'sds-api');
    ok(shown);
    assert.match(shown.stdout, /^in Temporal\s+20\/s in force \(api\); queue 20\/s, per source unset$/m);
    const api = await findDownstream(t.db.prisma, 'sds-api');
    assert.equal(api.callsPerSecond, 20);
    assert.equal(api.breaker.openMs, 5000);
    assert.equal(api.breaker.failureRate, 0.5, 'a setting left out is its default');

    const v2 = await tempFile(
      'ds2.yaml',
      `sources:\n${source('sds-one', 'sds-api')}downstreams:\n  - id: sds-api\n    isolated: true\n    callsPerSecond: 20\n    breaker: { openMs: 9000 }\n`,
    );
    const second = await apply(v2);
    ok(second);
    const table = lines(second.stdout).map(cells);
    assert.deepEqual(table.slice(2, 5), [
      ['DOWNSTREAM', 'ACTION', 'SETTINGS'],
      ['sds-api', 'update', 'breakerOpenMs'],
      ['sds-old', 'remove'],
    ]);
    assert.equal(await t.db.prisma.downstream.count({ where: { id: 'sds-old' } }), 0);
    const audits = await t.db.prisma.auditEntry.findMany({
      where: { targetType: 'downstream' },
      orderBy: { id: 'asc' },
    });
    assert.deepEqual(
      audits.map((a) => [a.action, a.targetId, a.actor]),
      [
        ['downstream.set', 'sds-api', 'erin'],
        ['downstream.set', 'sds-old', 'erin'],
        ['downstream.set', 'sds-api', 'erin'],
        ['downstream.remove', 'sds-old', 'erin'],
      ],
    );
    const update = audits[2]?.details as {
      before: { breaker: { openMs: number } };
      after: { breaker: { openMs: number } };
    };
    assert.equal(update.before.breaker.openMs, 5000);
    assert.equal(update.after.breaker.openMs, 9000);

    const again = await apply(v2, '--json');
    ok(again);
    assert.deepEqual(json<{ downstreams: unknown[] }>(again).downstreams, [
      { id: 'sds-api', action: 'unchanged', fields: [] },
    ]);
    const without = await tempFile('ds3.yaml', `sources:\n${source('sds-one', 'sds-api')}`);
    const kept = await apply(without, '--json');
    ok(kept);
    assert.deepEqual(json<{ downstreams: unknown[] }>(kept).downstreams, []);
    assert.equal((await findDownstream(t.db.prisma, 'sds-api')).breaker.openMs, 9000);
    assert.equal(await t.db.prisma.auditEntry.count({ where: { targetType: 'downstream' } }), 4);
  });

  it('apply: isolating a downstream whose sources have live runs is refused whole (those runs use the queue they were claimed with)', async () => {
    const plain = await tempFile(
      'iso0.yaml',
      `sources:\n${source('sds-busy', 'sds-iso')}downstreams:\n  - id: sds-iso\n`,
    );
    ok(await apply(plain));
    await seedOpenRun(t.db.prisma, 'sds-busy');
    const isolated = await tempFile(
      'iso1.yaml',
      `sources:\n${source('sds-busy', 'sds-iso')}downstreams:\n  - id: sds-iso\n    isolated: true\n    maxConcurrentCalls: 3\n`,
    );
    const refused = await apply(isolated);
    assert.equal(refused.code, 1, detail(refused));
    assert.match(
      refused.stderr,
      /downstreams\[0\]\.isolated: isolating downstream 'sds-iso' moves its partner calls to another task queue, and 1 live run\(s\) of its sources use the one they were claimed with/,
    );
    assert.equal((await findDownstream(t.db.prisma, 'sds-iso')).isolated, false, 'nothing was changed');
  });
});
