// R8's breakers where operators watch them: the breakers section of `durable-fetch status` (text
// and JSON; an open or half-open breaker is a problem, so `status --check` fails) and the state
// gauge every worker's sampler sets from PostgreSQL (`durable_fetch_breaker_state`). The CLI runs
// in process against a cloned database and the shared Temporal dev server (status reads the task
// queues).
// The downstreams are those of test/helpers/breaker-seed.ts; ids start with `bk-`.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { readBreakerStates } from '../db/retry/breaker-views.ts';
import { createMetrics } from '../runtime/metrics/metrics.ts';
import { observeBreakers } from '../runtime/metrics/breakers.ts';
import { type BreakerJson, seedBreakers } from './helpers/breaker-seed.ts';
import { detail, ok } from './helpers/cli.ts';
import { runCliInProcess } from './helpers/cli-in-process.ts';
import { useSourceCliEnv } from './helpers/source-cli-env.ts';

const t = useSourceCliEnv('test-bks');
const cli = (...args: string[]) => runCliInProcess(args, t.env);
const changedAt = async (id: string) =>
  (await t.db.prisma.breaker.findUniqueOrThrow({ where: { downstream: id } })).changedAt.toISOString();

/** One worker's metrics: its gauge keeps what each sample set, as a process's does. */
const metrics = createMetrics();

/** The gauge's series once a sampler has set them now: `downstream/state/forced` → value. */
async function sampledGauge(): Promise<Map<string, number>> {
  observeBreakers(metrics, await readBreakerStates(t.db.prisma));
  const { values } = await metrics.breakerState.get();
  return new Map(values.map((v) => [`${v.labels.downstream}/${v.labels.state}/${v.labels.forced}`, v.value]));
}

describe('breakers in status and metrics (R8)', () => {
  // After the file's database exists (the root hook of useSourceCliEnv).
  before(() => seedBreakers(t.db.prisma));

  it('status: each breaker with its state and budget (text and JSON); an open one, forced or not, or a half-open one is a problem, so --check fails until both are closed', async () => {
    ok(await cli('breakers', 'open', 'bk-configured', '--reason', 'drill', '--by', 'bob'));
    const open = await cli('status', '--check', '--json');
    assert.equal(open.code, 1, detail(open));
    const status = JSON.parse(open.stdout) as {
      healthy: boolean;
      problems: string[];
      breakers: BreakerJson[];
    };
    assert.equal(status.healthy, false);
    assert.deepEqual(status.problems, [
      `breaker of downstream bk-configured is open (forced by bob: drill) since ${await changedAt('bk-configured')}: its partner is not called (breakers show bk-configured)`,
      `breaker of downstream bk-orphan is open: 1 of 1 calls failed since ${await changedAt('bk-orphan')}: its partner is not called (breakers show bk-orphan)`,
    ]);
    assert.deepEqual(
      status.breakers.map((b) => [b.downstream, b.state, b.forced, b.budget.retries, b.budget.allowed]),
      [
        ['bk-configured', 'open', true, 2, 2],
        ['bk-orphan', 'open', false, 0, 10],
        ['bk-partner', 'closed', false, 2, 10],
        ['default.bk-s2', 'closed', false, 0, 10],
      ],
    );
    assert.match(open.stderr, /^durable-fetch: 2 problems need attention$/m);

    const text = ok(await cli('status'));
    assert.match(text, /^NEEDS ATTENTION/);
    assert.match(text, /^BREAKER\s+STATE\s+SINCE\s+REASON\s+RETRY BUDGET$/m);
    assert.match(text, /^bk-configured\s+open \(forced\)\s+\S+Z\s+drill\s+2\/2 SPENT$/m);
    assert.match(text, /^bk-orphan\s+open\s+\S+Z\s+1 of 1 calls failed\s+0\/10$/m);
    assert.match(text, /^default\.bk-s2\s+closed\s+-\s+0\/10$/m);

    ok(await cli('breakers', 'close', 'bk-configured', '--reason', 'drill over'));
    const one = await cli('status', '--check', '--json');
    assert.equal(one.code, 1, detail(one));
    // Past its open time, a breaker whose trial has not settled it reads half-open: still a
    // problem, as the alert counts it (a partner failing its trials moves between open and
    // half-open, and status must not read healthy in between).
    await t.db.prisma.breaker.update({
      where: { downstream: 'bk-orphan' },
      data: { halfOpenAt: new Date(Date.now() - 1_000) },
    });
    const halfOpen = await cli('status', '--check', '--json');
    assert.equal(halfOpen.code, 1, detail(halfOpen));
    assert.deepEqual((JSON.parse(halfOpen.stdout) as { problems: string[] }).problems, [
      `breaker of downstream bk-orphan is half_open: 1 of 1 calls failed since ${await changedAt('bk-orphan')}: its partner gets only trial calls (breakers show bk-orphan)`,
    ]);
    ok(await cli('breakers', 'close', 'bk-orphan', '--reason', 'partner is back'));
    const closed = await cli('status', '--check', '--json');
    assert.equal(closed.code, 0, detail(closed));
    assert.deepEqual((JSON.parse(closed.stdout) as { problems: string[] }).problems, []);
  });

  it('metrics: the state gauge has 1 for each known downstream’s state (0 for the others), labelled forced, with no series left over once forced changes', async () => {
    ok(await cli('breakers', 'open', 'bk-partner', '--reason', 'gauge', '--by', 'bob'));
    const opened = await sampledGauge();
    assert.deepEqual(
      [...opened].filter(([k]) => k.startsWith('bk-partner/')),
      [
        ['bk-partner/closed/true', 0],
        ['bk-partner/open/true', 1],
        ['bk-partner/half_open/true', 0],
      ],
    );
    assert.equal(opened.get('bk-configured/closed/false'), 1);
    assert.equal(opened.get('default.bk-s2/closed/false'), 1);
    assert.equal(
      opened.size,
      4 * 3,
      'three states of bk-configured, bk-orphan, bk-partner and default.bk-s2; not bk-removed',
    );

    ok(await cli('breakers', 'close', 'bk-partner', '--reason', 'gauge'));
    const closed = await sampledGauge();
    assert.equal(closed.get('bk-partner/closed/false'), 1);
    assert.deepEqual(
      [...closed.keys()].filter((k) => k.endsWith('/true')),
      [],
      'no forced series once nobody forces a breaker',
    );
  });
});
