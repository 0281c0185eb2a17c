// `durable-fetch sources update --config` and `--job`: the config is judged by the source's own
// job's schema (defaults applied, key order irrelevant) and the job type never changes. Real CLI,
// cloned database, shared Temporal dev server; source ids start with `supd-`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { detail, ok, runCli } from './helpers/cli.ts';
import { useSourceCliEnv } from './helpers/source-cli-env.ts';

const t = useSourceCliEnv('supd');
const auditOf = (id: string) =>
  t.db.prisma.auditEntry.findMany({ where: { targetType: 'source', targetId: id }, orderBy: { at: 'asc' } });

describe('sources update --config', { timeout: 300_000 }, () => {
  it("validates the config with the source's job and refuses --job", async () => {
    const id = 'supd-src';
    ok(
      await runCli(
        [
          'sources',
          'add',
          id,
          '--job',
          'exchange-rates',
          '--base-url',
          'https://fx.example.test',
          '--reason',
          'new',
        ],
        t.env,
      ),
    );
    const update = (...args: string[]) =>
      runCli(['sources', 'update', id, ...args, '--reason', 'fix'], t.env);
    const bad = await update('--config', '{"account":"","x":1}');
    assert.equal(bad.code, 1, detail(bad));
    assert.match(
      bad.stderr,
      /^durable-fetch: invalid update of source 'supd-src': --config: config\.account: .*; --config: config: Unrecognized key: "x"\n$/,
    );
    const notJson = await update('--config', 'nope', '--page-size', '10');
    assert.match(notJson.stderr, /--config: the value is not valid JSON/);
    const job = await update('--job', 'fetch-records');
    assert.match(job.stderr, /^durable-fetch: the job type of source 'supd-src' cannot change/);
    const row = await t.db.prisma.source.findUniqueOrThrow({ where: { id } });
    assert.deepEqual(
      [row.jobType, row.pageSize, row.config],
      ['exchange-rates', 1000, { account: 'fx:rates-imported', counterAccount: 'fx:suspense' }],
    );
    assert.equal((await auditOf(id)).length, 1, 'only the add is audited');

    const changed = ok(await update('--config', '{"counterAccount":"fx:other"}'));
    assert.match(
      changed,
      /^updated supd-src: config \{"account":"fx:rates-imported","counterAccount":"fx:suspense"\} -> \{"account":"fx:rates-imported","counterAccount":"fx:other"\}$/m,
    );
    const after = await t.db.prisma.source.findUniqueOrThrow({ where: { id } });
    assert.deepEqual(after.config, { account: 'fx:rates-imported', counterAccount: 'fx:other' });
    const last = (await auditOf(id)).at(-1)!;
    assert.equal(last.action, 'source.update');
    // The same config again (keys in another order) changes nothing.
    assert.match(
      ok(await update('--config', '{"counterAccount":"fx:other","account":"fx:rates-imported"}')),
      /nothing changed/,
    );
    assert.equal((await auditOf(id)).length, 2);
  });
});
