// `durable-fetch sources apply -f --prune`, what a file leaves out, and the example file: in
// process against this file's own cloned database (so that pruning meets only its sources) and
// the shared Temporal dev server, on its own task queue. Source ids start with `sprune-`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ScheduleNotFoundError } from '@temporalio/client';
import { scheduleIdFor } from '../client/schedules.ts';
import { SOURCE_DEFAULTS } from '../client/sources/file-schema.ts';
import { loadConfig, partnerUrl } from '../runtime/config.ts';
import { applyDemoSources } from '../worker/stack/demo-source.ts';
import { cells, detail, json, lines, ok } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { useSourceCliEnv } from './helpers/source-cli-env.ts';
import { type ApplyJson, seedOpenRun, tempFile } from './helpers/source-files.ts';

const t = useSourceCliEnv('sprune');
const apply = (f: string, ...args: string[]) =>
  runCliInProcess(['sources', 'apply', '-f', f, '--by', 'erin', ...args], t.env);
const source = (id: string, extra = '') => `  - id: ${id}\n    baseUrl: https://${id}.example.test\n${extra}`;

describe('sources apply: prune, defaults, the example', { timeout: 300_000 }, () => {
  it('--prune removes a source the file leaves out and is refused for one with an open run', async () => {
    const yearly = "    schedule: { cron: '0 3 1 1 *' }\n";
    const all = await tempFile(
      'all.yaml',
      `sources:\n${source('sprune-keep')}${source('sprune-gone', yearly)}${source('sprune-busy')}`,
    );
    ok(await apply(all));
    const scheduleId = scheduleIdFor(t.taskQueue, { id: 'sprune-gone', jobType: 'fetch-records' });
    t.schedules.add(scheduleId);
    await seedOpenRun(t.db.prisma, 'sprune-busy');
    const keep = await tempFile('keep.yaml', `sources:\n${source('sprune-keep')}`);

    const dry = await apply(keep, '--prune', '--dry-run');
    assert.equal(dry.code, 1, detail(dry));
    assert.match(dry.stdout, /^sprune-busy\s+refused$/m);
    assert.match(dry.stdout, /^sprune-gone\s+remove$/m);
    assert.match(
      dry.stderr,
      /^durable-fetch: 1 source would not be removed:\ncannot remove source 'sprune-busy': it has 1 open run/,
    );
    const removed = () => t.db.prisma.source.count({ where: { removedAt: { not: null } } });
    assert.equal(await removed(), 0, 'a dry run removes nothing');

    // A file emptied by mistake must not prune everything.
    const empty = await apply(await tempFile('empty.yaml', 'sources: []\n'), '--prune');
    assert.equal(empty.code, 1, detail(empty));
    assert.match(empty.stderr, /lists no sources: --prune would remove every source; nothing was changed/);
    assert.equal(await removed(), 0);

    const pruned = await apply(keep, '--prune');
    assert.equal(pruned.code, 1, detail(pruned));
    assert.deepEqual(lines(pruned.stdout).map(cells), [
      ['SOURCE', 'ACTION', 'FIELDS'],
      ['sprune-keep', 'unchanged'],
      ['sprune-busy', 'refused'],
      ['sprune-gone', 'remove'],
      [
        `applied ${keep}: 0 created, 0 updated, 1 unchanged, 1 removed, 1 refused; schedules: deleted ${scheduleId}`,
      ],
    ]);
    assert.deepEqual(lines(pruned.stderr), [
      'durable-fetch: 1 source not removed:',
      "cannot remove source 'sprune-busy': it has 1 open run (queued, running or waiting to retry): let them finish or cancel them (`durable-fetch runs list --source sprune-busy`)",
    ]);
    const gone = await t.db.prisma.source.findUniqueOrThrow({ where: { id: 'sprune-gone' } });
    assert.deepEqual([gone.enabled, gone.removedBy, gone.removedAt instanceof Date], [false, 'erin', true]);
    const trail = await t.db.prisma.auditEntry.findMany({
      where: { targetType: 'source', targetId: 'sprune-gone' },
      orderBy: { id: 'asc' },
    });
    assert.deepEqual(
      trail.map((a) => a.action),
      ['source.add', 'source.remove'],
    );
    await assert.rejects(t.client.schedule.getHandle(scheduleId).describe(), ScheduleNotFoundError);
    const busy = await t.db.prisma.source.findUniqueOrThrow({ where: { id: 'sprune-busy' } });
    assert.deepEqual([busy.removedAt, busy.enabled], [null, true]);
    assert.equal(await removed(), 1);

    // A removed source's id is never reused.
    const back = await apply(all);
    assert.equal(back.code, 1, detail(back));
    assert.match(
      back.stderr,
      /all\.yaml: sources\[1\]\.id: source 'sprune-gone' was removed \S+ by erin: .* never reused$/m,
    );
  });

  it("the defaults a file leaves out are the columns' defaults, and npm start sets the demo up from the example", async () => {
    const row = await t.db.prisma.source.create({
      data: { id: 'sprune-bare', name: 'bare', baseUrl: 'https://bare.example.test' },
    });
    const d = SOURCE_DEFAULTS;
    assert.deepEqual(Object.fromEntries(Object.keys(d).map((k) => [k, row[k as keyof typeof d]])), { ...d });

    // npm start applies the example file itself, pointed at where the demo partner runs.
    const applied = await applyDemoSources(
      { prisma: t.db.prisma, temporal: t.client, taskQueue: t.taskQueue, maxFutureDays: 0 },
      partnerUrl(loadConfig({})),
    );
    for (const [id, jobType] of [
      ['demo', 'fetch-records'],
      ['demo-fx', 'exchange-rates'],
      ['demo-catalog', 'http'],
    ] as const)
      t.schedules.add(scheduleIdFor(t.taskQueue, { id, jobType }));
    assert.deepEqual(
      applied.changes.map((c) => [c.id, c.action]),
      [
        ['demo', 'create'],
        ['demo-fx', 'create'],
        ['demo-catalog', 'create'],
      ],
    );
    const catalog = await t.db.prisma.source.findUniqueOrThrow({ where: { id: 'demo-catalog' } });
    assert.equal(catalog.jobType, 'http');
    const plan = json<ApplyJson>(await apply('examples/sources.yaml', '--dry-run', '--json'));
    assert.deepEqual(
      plan.changes.map((c) => [c.id, c.action, c.fields]),
      [
        ['demo', 'unchanged', []],
        ['demo-fx', 'unchanged', []],
        ['demo-catalog', 'unchanged', []],
      ],
    );
  });
});
