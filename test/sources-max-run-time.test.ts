// A source's maximum run time (R9 "every job has a maximum run time") as operators set it: `sources
// add/update --max-run-time <duration>` and a sources file's `maxRunTimeMs`, checked by one rule
// (1 s to 7 days) with the same message whichever sets it, defaulting to a day, shown by `sources
// show` and `sources list`. The CLI runs in process against a cloned database; source ids start
// with `smrt-`. What the workflow does with it: run-deadline.e2e.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { detail, ok } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { useSourceCliEnv } from './helpers/source-cli-env.ts';
import { tempFile } from './helpers/source-files.ts';

const t = useSourceCliEnv('test-smrt');
const cli = (...args: string[]) => runCliInProcess(args, t.env);
const BASE = 'http://127.0.0.1:9/partner';
const maxRunTimeOf = async (id: string) =>
  (await t.db.prisma.source.findUniqueOrThrow({ where: { id } })).maxRunTimeMs;

describe('sources: maximum run time', () => {
  it('add sets it from a duration (a day when left out), update changes it (audited), show and list print it', async () => {
    const add = (id: string, ...extra: string[]) =>
      cli('sources', 'add', id, '--job', 'fetch-records', '--base-url', BASE, ...extra, '--reason', 'new');
    ok(await add('smrt-a', '--max-run-time', '90m'));
    ok(await add('smrt-b'));
    assert.deepEqual([await maxRunTimeOf('smrt-a'), await maxRunTimeOf('smrt-b')], [5_400_000, 86_400_000]);

    const updated = ok(await cli('sources', 'update', 'smrt-a', '--max-run-time', '2d', '--reason', 'slow'));
    assert.equal(updated.trim(), 'updated smrt-a: maxRunTimeMs 5400000 -> 172800000');
    assert.equal(await maxRunTimeOf('smrt-a'), 172_800_000);
    const audit = await t.db.prisma.auditEntry.findFirstOrThrow({
      where: { targetId: 'smrt-a', action: 'source.update' },
    });
    assert.deepEqual(audit.details, {
      before: { maxRunTimeMs: 5_400_000 },
      after: { maxRunTimeMs: 172_800_000 },
    });

    assert.match(
      ok(await cli('sources', 'show', 'smrt-a')),
      /^max run time\s+48h 00m \(then DeadlineExceeded\)$/m,
    );
    const listed = ok(await cli('sources', 'list')).split('\n');
    assert.match(listed.find((l) => l.startsWith('smrt-b ')) ?? '', /\s24h 00m$/);
  });

  it('refuses a duration under a second, over a week or unreadable, with one line, and changes nothing', async () => {
    ok(
      await cli('sources', 'add', 'smrt-bad', '--job', 'fetch-records', '--base-url', BASE, '--reason', 'x'),
    );
    for (const bad of ['999', '8d', 'forever']) {
      const refused = await cli('sources', 'update', 'smrt-bad', '--max-run-time', bad, '--reason', 'x');
      assert.notEqual(refused.code, 0, detail(refused));
      assert.match(refused.stderr, /--max-run-time: expected a duration of 1000 ms to 7 days/);
    }
    assert.equal(await maxRunTimeOf('smrt-bad'), 86_400_000);
  });

  it('a sources file sets it as maxRunTimeMs, leaving it out means the default, and validate names a bad one by its path', async () => {
    const file = await tempFile(
      'smrt.yaml',
      `sources:\n  - id: smrt-file\n    baseUrl: ${BASE}\n    maxRunTimeMs: 3600000\n  - id: smrt-file-d\n    baseUrl: ${BASE}\n`,
    );
    ok(await cli('sources', 'apply', '-f', file, '--reason', 'from the repo'));
    assert.deepEqual(
      [await maxRunTimeOf('smrt-file'), await maxRunTimeOf('smrt-file-d')],
      [3_600_000, 86_400_000],
    );
    const bad = await tempFile(
      'smrt-bad.yaml',
      `sources:\n  - id: smrt-file\n    baseUrl: ${BASE}\n    maxRunTimeMs: 10\n`,
    );
    const refused = await cli('sources', 'validate', '-f', bad);
    assert.notEqual(refused.code, 0, detail(refused));
    assert.match(refused.stderr, /sources\[0\]\.maxRunTimeMs: expected a duration of 1000 ms to 7 days/);
  });
});
