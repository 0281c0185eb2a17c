// `durable-fetch breakers list|show|open|close` (R8: operators see and steer the shared circuit
// breakers), run in process against a cloned database. The breakers' traffic is made with the
// admissions the workers use (test/helpers/breaker-seed.ts), so the windows and budgets shown are
// those every worker decides by. Assertions are on output, exit codes, breaker rows and audit
// entries. Their place in `status` and the metrics: breakers-status.test.ts. Ids start with `bk-`.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { admitCall } from '../db/retry/breaker.ts';
import { defaultSettings } from '../db/ledger/downstreams.ts';
import { assertOneLineError, assertUsageError, cells, fieldsOf, json, ok, runCli } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { type BreakerJson, seedBreakers } from './helpers/breaker-seed.ts';
import { useSourceCliEnv } from './helpers/source-cli-env.ts';

const t = useSourceCliEnv('test-bk');
const cli = (...args: string[]) => runCliInProcess(args, t.env);
const breakerAudit = (id: string) =>
  t.db.prisma.auditEntry.findMany({ where: { targetType: 'breaker', targetId: id }, orderBy: { at: 'asc' } });
const breakerRow = (id: string) => t.db.prisma.breaker.findUnique({ where: { downstream: id } });

describe('breakers cli (R8)', () => {
  // After the file's database exists (the root hook of useSourceCliEnv).
  before(() => seedBreakers(t.db.prisma));

  it('breakers: --help of the group and of each command names its arguments and options', async () => {
    const noConfig = { DATABASE_URL: 'mysql://nope' };
    const top = await runCli(['--help'], noConfig);
    assert.match(top.stdout, /^\s+breakers\b.*circuit breakers/m);
    const group = ok(await runCli(['breakers', '--help'], noConfig));
    assert.match(group, /shared\s+by every worker through PostgreSQL/);
    for (const command of ['list', 'show', 'open', 'close']) {
      assert.match(group, new RegExp(`^\\s+${command}\\b`, 'm'));
      const help = ok(await runCli(['breakers', command, '--help'], noConfig));
      assert.match(help, new RegExp(`^Usage: durable-fetch breakers ${command} \\[options\\]`));
      for (const option of ['--json', ...(command === 'list' ? [] : ['<downstream>'])])
        assert.ok(help.includes(option));
      if (command === 'open' || command === 'close') assert.match(help, /--reason <text>.*--by <who>/s);
    }
  });

  it('breakers list: every downstream a row, a live source or a breaker names (not a removed source’s), with window and budget use', async () => {
    const list = json<BreakerJson[]>(await cli('breakers', 'list', '--json'));
    assert.deepEqual(
      list.map((b) => [b.downstream, b.state, b.configured]),
      [
        ['bk-configured', 'closed', true],
        ['bk-orphan', 'open', false],
        ['bk-partner', 'closed', false],
        // bk-s2 names no downstream: it has a breaker of its own.
        ['default.bk-s2', 'closed', false],
      ],
    );
    const [configured, orphan, partner] = list;
    assert.deepEqual(partner?.window, { calls: 7, failures: 3, retries: 2 });
    assert.deepEqual(partner?.budget, {
      windowMs: 60_000,
      calls: 7,
      retries: 2,
      allowed: 10,
      exhausted: false,
    });
    assert.deepEqual(configured?.budget, {
      windowMs: 60_000,
      calls: 4,
      retries: 2,
      allowed: 2,
      exhausted: true,
    });
    assert.equal(configured?.taskQueue, `${t.taskQueue}-ds-bk-configured`);
    assert.equal(partner?.taskQueue, t.taskQueue);
    assert.deepEqual(
      [orphan?.forced, orphan?.reason, orphan?.changedBy],
      [false, '1 of 1 calls failed', 'system:breaker'],
    );

    const text = ok(await cli('breakers', 'list'))
      .trimEnd()
      .split('\n');
    assert.match(text[0]!, /^DOWNSTREAM\s+STATE\s+SINCE\s+REASON\s+CALLS\/FAILED\s+RETRIES\s+QUEUE$/);
    const line = (id: string) => text.find((l) => l.startsWith(`${id} `)) ?? assert.fail(`no line for ${id}`);
    assert.deepEqual(cells(line('bk-partner')), [
      'bk-partner',
      'closed',
      '-',
      '7/3',
      '2/10',
      `shared: ${t.taskQueue}`,
    ]);
    assert.deepEqual(cells(line('bk-configured')).slice(-3), [
      '4/0',
      '2/2 SPENT',
      `isolated: ${t.taskQueue}-ds-bk-configured`,
    ]);
    assert.match(line('bk-orphan'), /^bk-orphan\s+open\s+\d{4}-\d\d-\d\dT\S+Z\s+1 of 1 calls failed\s/);
  });

  it('breakers show: the breaker, its budget, its settings (the row’s or the defaults), its sources; --json the same', async () => {
    const fields = fieldsOf(ok(await cli('breakers', 'show', 'bk-partner')));
    assert.equal(fields.get('state'), 'closed');
    assert.equal(fields.get('changed by'), '-');
    assert.equal(fields.get('window'), '7 calls, 3 failed (last 1m 00s, since it last closed)');
    assert.equal(fields.get('retry budget'), '2 of 10 retries over 7 calls (last 1m 00s)');
    assert.equal(fields.get('settings'), 'the defaults (no downstream row)');
    assert.equal(
      fields.get('breaker'),
      'opens at 50% failed of at least 20 calls in 1m 00s; open 30.0s; 3 trial calls',
    );
    assert.equal(fields.get('budget'), '20% of the calls, at least 10, over 1m 00s');
    assert.equal(fields.get('sources'), 'bk-s1');

    const shown = json<BreakerJson & { sources: string[] }>(
      await cli('breakers', 'show', 'bk-configured', '--json'),
    );
    assert.equal(shown.configured, true);
    assert.deepEqual(
      [shown.settings.isolated, shown.settings.breaker.minCalls, shown.settings.retryBudget.ratio],
      [true, 4, 0.5],
    );
    assert.deepEqual(shown.sources, []);
    assert.equal(shown.budget.exhausted, true);
  });

  it('breakers open/close: forced open and closed under the row, each audited with actor, reason, before and after', async () => {
    const opened = ok(
      await cli('breakers', 'open', 'bk-partner', '--reason', 'partner maintenance', '--by', 'alice'),
    );
    assert.equal(
      opened.trim(),
      'opened the breaker of bk-partner: no partner calls until `breakers close bk-partner`; it was closed',
    );
    const row = await breakerRow('bk-partner');
    assert.deepEqual(
      [row?.state, row?.forced, row?.reason, row?.changedBy],
      ['open', true, 'partner maintenance', 'alice'],
    );
    // Every worker's next admission is refused: forced open does not wait for a half-open time.
    const refused = await admitCall(t.db.prisma, defaultSettings('bk-partner'), false);
    assert.ok(!refused.admitted && refused.refusal === 'forced_open', JSON.stringify(refused));

    const again = await cli('breakers', 'open', 'bk-partner', '--reason', 'twice');
    assertOneLineError(
      again,
      /the breaker of 'bk-partner' is already open \(forced by alice: partner maintenance\), since \d{4}-/,
    );

    const closed = json<{ before: { state: string; forced: boolean }; after: { state: string } }>(
      await cli('breakers', 'close', 'bk-partner', '--reason', 'partner is back', '--json'),
    );
    assert.deepEqual(
      [closed.before.state, closed.before.forced, closed.after.state],
      ['open', true, 'closed'],
    );
    // Closing forgets the 7 calls and 3 failures before it (and its own second): the window starts again.
    const [view] = json<BreakerJson[]>(await cli('breakers', 'list', '--json')).filter(
      (b) => b.downstream === 'bk-partner',
    );
    assert.deepEqual([view?.window.calls, view?.window.failures], [0, 0]);
    assert.equal((await admitCall(t.db.prisma, defaultSettings('bk-partner'), false)).admitted, true);
    assertOneLineError(
      await cli('breakers', 'close', 'bk-partner', '--reason', 'twice'),
      /the breaker of 'bk-partner' is already closed$/,
    );

    const audit = await breakerAudit('bk-partner');
    assert.deepEqual(
      audit.map((a) => [a.action, a.actor, a.reason]),
      [
        ['breaker.open', 'alice', 'partner maintenance'],
        ['breaker.close', 'cli-tester', 'partner is back'],
      ],
      'the refused open and close wrote nothing; --by names the actor, else the OS user',
    );
    const [openEntry, closeEntry] = audit;
    assert.deepEqual(openEntry?.details, {
      before: { state: 'closed', forced: false, reason: null, changedBy: null, changedAt: null },
      after: {
        state: 'open',
        forced: true,
        reason: 'partner maintenance',
        changedBy: 'alice',
        changedAt: row?.changedAt.toISOString(),
      },
    });
    assert.deepEqual(closeEntry?.details, {
      before: (openEntry?.details as { after: unknown }).after,
      after: {
        state: 'closed',
        forced: false,
        reason: 'partner is back',
        changedBy: 'cli-tester',
        changedAt: (await breakerRow('bk-partner'))?.changedAt.toISOString(),
      },
    });

    const trail = ok(await cli('breakers', 'show', 'bk-partner'));
    assert.match(trail, /^audit trail:$/m);
    assert.match(trail, /\s+alice\s+breaker\.open\s+partner maintenance$/m);
  });

  it('breakers open: a breaker its failures opened becomes forced (before says open, not forced)', async () => {
    const done = json<{
      before: { state: string; forced: boolean; changedBy: string };
      after: { forced: boolean };
    }>(await cli('breakers', 'open', 'bk-orphan', '--reason', 'keep it shut', '--json'));
    assert.deepEqual(
      [done.before.state, done.before.forced, done.before.changedBy, done.after.forced],
      ['open', false, 'system:breaker', true],
    );
    ok(await cli('breakers', 'close', 'bk-orphan', '--reason', 'done'));
    assert.deepEqual(
      (await breakerAudit('bk-orphan')).map((a) => a.action),
      ['breaker.open', 'breaker.close'],
    );
  });

  it('breakers: a bad downstream name, an unknown one, an empty reason are refused with one line; a missing --reason is a usage error; nothing is written', async () => {
    const bad = ['Bad-Name', 'x'.repeat(64), '1abc', 'a b', 'default.', 'default.Bad'].flatMap((name) => [
      ['show', name],
      ['open', name, '--reason', 'r'],
      ['close', name, '--reason', 'r'],
    ]);
    for (const args of bad) {
      assertOneLineError(await cli('breakers', ...args), /is not a downstream name: expected 1\.\.63 of a-z/);
    }
    assertOneLineError(
      await cli('breakers', 'open', 'bk-nobody', '--reason', 'typo'),
      /no downstream 'bk-nobody': no downstream row, no source and no breaker names it \(known: bk-configured, bk-orphan, bk-partner, default\.bk-s2\)/,
    );
    assertOneLineError(await cli('breakers', 'show', 'bk-removed'), /no downstream 'bk-removed'/);
    assertOneLineError(
      await cli('breakers', 'open', 'default.bk-s2', '--reason', '   '),
      /the reason \(--reason\) must be 1\.\.1000 characters/,
    );
    assertOneLineError(
      await cli('breakers', 'open', 'default.bk-s2', '--reason', 'r', '--by', ' '),
      /the actor \(--by\) must be 1\.\.200 characters/,
    );
    assertUsageError(
      await runCli(['breakers', 'open', 'default.bk-s2'], t.env),
      /required option '--reason <text>' not specified/,
    );
    assert.equal(await breakerRow('default.bk-s2'), null);
    assert.equal(await breakerRow('bk-nobody'), null);
    assert.equal(
      await t.db.prisma.auditEntry.count({ where: { targetId: { in: ['default.bk-s2', 'bk-nobody'] } } }),
      0,
    );
  });
});
