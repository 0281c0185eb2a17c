// A source's choice of local page fetches (`localFetch`, on by default) as operators set it:
// `sources add [--local-fetch | --no-local-fetch]`, `sources update --local-fetch / --no-local-fetch` (audited) and a
// sources file's `localFetch`, shown by `sources show`. The CLI runs in process against a cloned
// database; source ids start with `slf-`. What a run does with it: local-fetch.e2e.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { detail, ok } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { useSourceCliEnv } from './helpers/source-cli-env.ts';
import { tempFile } from './helpers/source-files.ts';

const t = useSourceCliEnv('test-slf');
const cli = (...args: string[]) => runCliInProcess(args, t.env);
const BASE = 'http://127.0.0.1:9/partner';
const localFetchOf = async (id: string) =>
  (await t.db.prisma.source.findUniqueOrThrow({ where: { id } })).localFetch;

describe('sources: local page fetches', () => {
  it('add sets it with --no-local-fetch (on when left out), update turns it off and on (audited), show prints it', async () => {
    const add = (id: string, ...extra: string[]) =>
      cli('sources', 'add', id, '--job', 'fetch-records', '--base-url', BASE, ...extra, '--reason', 'new');
    ok(await add('slf-a'));
    ok(await add('slf-b', '--no-local-fetch'));
    ok(await add('slf-c', '--local-fetch'));
    assert.deepEqual(
      [await localFetchOf('slf-a'), await localFetchOf('slf-b'), await localFetchOf('slf-c')],
      [true, false, true],
    );

    const off = ok(await cli('sources', 'update', 'slf-a', '--no-local-fetch', '--reason', 'partner slow'));
    assert.equal(off.trim(), 'updated slf-a: localFetch true -> false');
    const on = ok(await cli('sources', 'update', 'slf-b', '--local-fetch', '--reason', 'fast partner'));
    assert.equal(on.trim(), 'updated slf-b: localFetch false -> true');
    assert.deepEqual([await localFetchOf('slf-a'), await localFetchOf('slf-b')], [false, true]);
    const audit = await t.db.prisma.auditEntry.findFirstOrThrow({
      where: { targetId: 'slf-a', action: 'source.update' },
    });
    assert.deepEqual(audit.details, { before: { localFetch: true }, after: { localFetch: false } });

    assert.match(ok(await cli('sources', 'show', 'slf-b')), /^local fetch\s+yes /m);
    assert.match(ok(await cli('sources', 'show', 'slf-a')), /^local fetch\s+no$/m);
  });

  it('a sources file sets it as localFetch, leaving it out turns it on, and a bad one is named by its path and changes nothing', async () => {
    const file = await tempFile(
      'slf.yaml',
      `sources:\n  - id: slf-file\n    baseUrl: ${BASE}\n    localFetch: false\n  - id: slf-file-d\n    baseUrl: ${BASE}\n`,
    );
    ok(await cli('sources', 'apply', '-f', file, '--reason', 'from the repo'));
    assert.deepEqual([await localFetchOf('slf-file'), await localFetchOf('slf-file-d')], [false, true]);

    const bad = await tempFile(
      'slf-bad.yaml',
      `sources:\n  - id: slf-file\n    baseUrl: ${BASE}\n    localFetch: yes please\n`,
    );
    for (const command of ['validate', 'apply']) {
      const refused = await cli(
        'sources',
        command,
        '-f',
        bad,
        ...(command === 'apply' ? ['--reason', 'x'] : []),
      );
      assert.notEqual(refused.code, 0, detail(refused));
      assert.match(refused.stderr, /sources\[0\]\.localFetch: /);
    }
    assert.equal(await localFetchOf('slf-file'), false, 'the refused apply changed nothing');

    // The key left out of the file: the default, on, as for a new source.
    const without = await tempFile('slf-without.yaml', `sources:\n  - id: slf-file\n    baseUrl: ${BASE}\n`);
    const applied = ok(await cli('sources', 'apply', '-f', without, '--reason', 'back to the default'));
    assert.match(applied, /localFetch/);
    assert.equal(await localFetchOf('slf-file'), true);
  });
});
