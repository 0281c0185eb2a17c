// Alerts and backlog under real faults (R12c, issue 35 §3): a real Prometheus (Debian's package,
// installed by scripts/promtool.ts when missing, on a free loopback port with a config of this
// test's own) scrapes a real worker's and a real publisher's /metrics every second with
// ops/alerts.yml loaded, and each scenario watches /api/v1/alerts: the alerts that should fire go
// pending, then firing, then leave the list after recovery; a short spike fires nothing.
//
// Scaled, so that a scenario takes a minute or three rather than an hour: every rule's `for:` and
// every range/subquery window of its expression is divided by SCALE (10m → 30s, [10m:1m] →
// [30s:3s]); thresholds are not (the oldest task must still be 120 s old). The expressions are
// read from ops/alerts.yml, not retyped (test/helpers/prometheus.ts): a broken one breaks this.
// The downstream's breaker and retry-budget windows are divided by SCALE too (alert-stack.ts).
// Processes sample health every INTERVAL_S, as Prometheus scrapes and evaluates.
//
// DF_ALERT_SCENARIOS=partner,paused (keys: partner, paused, database, temporal, spike) runs only
// those, for a quick look; the rest are reported skipped.
//
// Each scenario prints its timeline (seconds from the fault's start) and writes every timeline to
// test-results/alerts-timeline.md. Timeouts come from the rules: threshold lead + scaled `for` +
// scaled window + evaluation intervals, doubled for a loaded machine, plus slack.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROJECT_ROOT } from '../../runtime/config.ts';
import { startDevServer, type DevServer } from '../../worker/stack/temporal-dev-server.ts';
import { datesFrom, startAlertStack, type AlertStack } from '../helpers/alert-stack.ts';
import { type TimelineRow, watchAlerts, writeTimeline } from '../helpers/alert-watch.ts';
import { refuseConnections } from '../helpers/database.ts';
import { readScaledRules, type ScaledRules } from '../helpers/prometheus.ts';
import { temporalAddress } from '../helpers/temporal.ts';

const SCALE = 20;
const INTERVAL_S = 1;
const TIMELINE_FILE = path.join(PROJECT_ROOT, 'test-results', 'alerts-timeline.md');
/** The backlog alert's age threshold (ops/alerts.yml: `> 120`): a pause must outlast it. */
const BACKLOG_AGE_S = 120;
/** A spike: shorter than every scaled `for` of the alerts it could touch (30 s and more), and than the 120 s backlog age. */
const SPIKE_S = 10;

const only = process.env.DF_ALERT_SCENARIOS ? process.env.DF_ALERT_SCENARIOS.split(',') : undefined;
/** `it`'s options for scenario `key`: skipped when DF_ALERT_SCENARIOS names others. */
const pick = (key: string) => ({ skip: only !== undefined && !only.includes(key) });

let rules: ScaledRules;
const rows: TimelineRow[] = [];

/** A fault in progress: `recover` ends it. */
interface Fault {
  recover(): Promise<void> | void;
}

interface Scenario {
  name: string;
  /** Alerts that must fire during the fault and resolve after recovery. */
  expected: string[];
  /** Alerts that may also fire (a consequence of the fault, not a false alarm). */
  allowed?: string[];
  /** Seconds of fault before an expected alert's condition can hold (e.g. an age threshold). */
  leadS: number;
  /** Seconds the fault lasts at least (a spike: exactly). */
  holdS: number;
  start(stack: AlertStack): Promise<Fault> | Fault;
}

const forOf = (alert: string) => rules.forSeconds.get(alert) ?? 0;
const windowOf = (alert: string) => rules.windowSeconds.get(alert) ?? 0;
/** How long `alert` may take to fire once its fault began `leadS` seconds before it can hold, ms. */
const fireWithinMs = (alert: string, leadS: number) =>
  ((leadS + forOf(alert) + windowOf(alert) + 10 * INTERVAL_S) * 2 + 30) * 1000;

/** Runs one scenario on `stack`: baseline quiet, fault, expected alerts firing, recovery, resolved. */
async function runScenario(t: TestContext, stack: AlertStack, s: Scenario): Promise<void> {
  const { prometheus } = stack;
  // Baseline: Prometheus scrapes both processes and nothing is pending or firing.
  const deadline = Date.now() + 60_000;
  let up = await prometheus.query('up == 1');
  while (up.length < 2 && Date.now() < deadline) {
    await sleep(INTERVAL_S * 1000);
    up = await prometheus.query('up == 1');
  }
  assert.equal(up.length, 2, `both targets scraped: ${await prometheus.targets()}`);
  await sleep(5 * INTERVAL_S * 1000);
  assert.deepEqual(await prometheus.alerts(), [], 'no alert before the fault');
  assert.equal((await prometheus.rules()).size, rules.forSeconds.size, 'every alert rule loaded');

  const startedAt = Date.now();
  const watch = watchAlerts(prometheus, startedAt);
  let recovery = 0;
  try {
    const fault = await s.start(stack);
    try {
      if (s.expected.length > 0) {
        const within = Math.max(...s.expected.map((a) => fireWithinMs(a, s.leadS)));
        await watch.until(
          () => s.expected.every((a) => watch.times.get(a)?.firing !== undefined),
          `${s.expected.join(', ')} to fire`,
          within,
        );
      }
      const left = s.holdS - watch.elapsed();
      if (left > 0) await sleep(left * 1000);
    } finally {
      recovery = watch.elapsed();
      await fault.recover();
    }
    const fired = watch.fired();
    const resolveWithin =
      Math.max(60, ...fired.map((a) => (windowOf(a) + forOf(a) + 10 * INTERVAL_S) * 2 + 60)) * 1000;
    await watch.until(
      () => fired.every((a) => watch.times.get(a)?.resolved !== undefined),
      `${fired.join(', ')} to resolve after recovery`,
      resolveWithin,
    );
    // Settle: anything still pending either fires (a false alarm, caught below) or goes away.
    const settleS = 2 * Math.max(...rules.forSeconds.values());
    await watch.until(
      () =>
        watch.elapsed() - recovery >= settleS &&
        [...watch.times.values()].every((v) => v.firing === undefined || v.resolved !== undefined),
      'the alerts to settle',
      (settleS + 60) * 1000,
    );
    assert.deepEqual(await prometheus.alerts(), [], 'no alert pending or firing after recovery');
  } finally {
    await watch.stop();
    for (const [alert, times] of watch.times) rows.push({ scenario: s.name, alert, times, recovery });
    if (watch.times.size === 0) rows.push({ scenario: s.name, alert: '(none)', times: {}, recovery });
    await writeTimeline(TIMELINE_FILE, timelineHeader(), rows);
    for (const [alert, times] of watch.times) {
      t.diagnostic(
        `${s.name}: ${alert} pending ${times.pending?.toFixed(1)} s, firing ${times.firing?.toFixed(1) ?? '—'} s, ` +
          `recovery ${recovery.toFixed(1)} s, resolved ${times.resolved?.toFixed(1) ?? '—'} s`,
      );
    }
    if (watch.times.size === 0)
      t.diagnostic(`${s.name}: no alert pending or firing; recovery ${recovery.toFixed(1)} s`);
  }

  const fired = watch.fired();
  for (const alert of s.expected) assert.ok(fired.includes(alert), `${alert} fired`);
  const unexpected = fired.filter((a) => !s.expected.includes(a) && !(s.allowed ?? []).includes(a));
  assert.deepEqual(unexpected, [], 'no alert fired that this fault does not explain');
  for (const alert of fired) {
    const { pending = 0, firing = 0 } = watch.times.get(alert) ?? {};
    // It waited its `for` (less one evaluation interval each side: the poll sees states late).
    assert.ok(
      firing - pending >= forOf(alert) - 2 * INTERVAL_S,
      `${alert} waited its for (${forOf(alert)} s)`,
    );
  }
}

function timelineHeader(): string {
  return [
    '# Alerts under real faults: measured timeline',
    '',
    `Seconds from the fault's start. Rules: ops/alerts.yml with \`for:\` and windows divided by ${SCALE};`,
    `scrape, evaluation and health sampling every ${INTERVAL_S} s. Machine: ${os.cpus().length} cores,`,
    `${os.arch()}, ${new Date().toISOString().slice(0, 10)}. "recovery" is when the fault ended.`,
  ].join('\n');
}

/** Repeats `step` every `everyMs` until stopped (a fault that must be kept up); `stop` rethrows its failure. */
function keepUp(step: () => Promise<void>, everyMs: number): { stop(): Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running) {
      await step();
      await sleep(everyMs);
    }
  })();
  loop.catch(() => {}); // observed by stop(); the fault ends at the next recovery either way
  return {
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** The scenario's stack on `address` (the shared dev server unless given). */
function stackFor(name: string, address?: string, pageDelayMs?: number) {
  return startAlertStack({
    name: `${name}-${randomUUID().slice(0, 8)}`,
    temporalAddress: address ?? temporalAddress(),
    rulesText: rules.text,
    scale: SCALE,
    intervalSeconds: INTERVAL_S,
    ...(pageDelayMs ? { pageDelayMs } : {}),
  });
}

/** Runs `s` on a fresh stack, stopping it (and Prometheus) whatever happens. */
async function withStack(t: TestContext, stack: Promise<AlertStack>, s: Scenario): Promise<void> {
  const ready = await stack;
  try {
    await runScenario(t, ready, s);
  } catch (error) {
    throw new Error(`${String(error)}\n${ready.output().slice(-4_000)}`, { cause: error });
  } finally {
    await ready.stop();
  }
}

describe('alerts under real faults (R12c)', { timeout: 3_600_000 }, () => {
  before(async () => {
    rules = await readScaledRules(SCALE);
  });
  after(async () => {
    if (rows.length > 0) await writeTimeline(TIMELINE_FILE, timelineHeader(), rows);
  });

  it(
    'partner outage: the breaker alert fires, then resolves once the partner is back',
    pick('partner'),
    async (t) => {
      await withStack(t, stackFor('partner'), {
        name: 'partner outage',
        expected: ['DurableFetchBreakerOpen'],
        // Runs outlast the outage (no dead letters); DownstreamFailing's ratio needs 10 calls per
        // (scaled) window, which an open breaker's trial calls seldom make.
        allowed: ['DurableFetchRetryBudgetExhausted', 'DurableFetchDownstreamFailing'],
        leadS: 10,
        holdS: 0,
        async start(stack) {
          stack.partner.faults.add({ sourceId: stack.source, kind: 'status', status: 503, times: 1_000_000 });
          await stack.startRuns(datesFrom(0, 8));
          return { recover: () => stack.partner.faults.clear() };
        },
      });
    },
  );

  it(
    'paused workers: the backlog alerts fire while the worker is frozen, then resolve',
    pick('paused'),
    async (t) => {
      await withStack(t, stackFor('paused'), {
        name: 'paused workers',
        expected: ['DurableFetchBacklogAgeGrowing', 'DurableFetchCompletionBelowArrival'],
        leadS: BACKLOG_AGE_S,
        holdS: 0,
        start(stack) {
          stack.worker.child.kill('SIGSTOP');
          // Runs keep arriving while no one takes them: one every 2 s (bounded by the dates).
          let next = 0;
          const arrivals = keepUp(async () => {
            if (next < 200) await stack.startRuns(datesFrom(next++, 1));
          }, 2_000);
          return {
            async recover() {
              await arrivals.stop();
              stack.worker.child.kill('SIGCONT');
            },
          };
        },
      });
    },
  );

  it(
    'database outage: the database refusing connections until the alert fires, then back',
    pick('database'),
    async (t) => {
      await withStack(t, stackFor('database', undefined, 1_000), {
        name: 'database outage',
        expected: ['DurableFetchDatabaseUnreachable'],
        leadS: 0,
        holdS: 0,
        async start(stack) {
          await stack.startRuns(datesFrom(0, 6));
          const refusing = keepUp(() => refuseConnections(stack.db.name, true), 1_000);
          return {
            async recover() {
              await refusing.stop();
              await refuseConnections(stack.db.name, false);
            },
          };
        },
      });
    },
  );

  it(
    'Temporal outage: the Temporal server killed until the alert fires, then restarted on its state',
    pick('temporal'),
    async (t) => {
      const cliPath = process.env.DF_TEST_TEMPORAL_CLI;
      assert.ok(cliPath, 'DF_TEST_TEMPORAL_CLI is set by test/run.ts');
      const dbFile = path.join(os.tmpdir(), `df-alerts-temporal-${randomUUID()}`, 'temporal.db');
      const servers: DevServer[] = [await startDevServer({ cliPath, port: 0, headless: true, dbFile })];
      const port = Number(servers[0]!.address.split(':').pop());
      try {
        await withStack(t, stackFor('temporal', servers[0]!.address, 1_000), {
          name: 'Temporal outage',
          expected: ['DurableFetchTemporalUnreachable'],
          leadS: 0,
          holdS: 0,
          async start(stack) {
            await stack.startRuns(datesFrom(0, 6));
            process.kill(servers[0]!.pid, 'SIGKILL');
            return {
              async recover() {
                servers.push(await startDevServer({ cliPath, port, headless: true, dbFile }));
              },
            };
          },
        });
      } finally {
        for (const server of servers) await server.stop();
        await rm(path.dirname(dbFile), { recursive: true, force: true });
      }
    },
  );

  it(
    'short spikes (the partner failing for 10 s, then the worker frozen for 10 s) fire nothing',
    pick('spike'),
    async (t) => {
      await withStack(t, stackFor('spike'), {
        name: 'short spikes',
        expected: [],
        leadS: 0,
        holdS: 2 * SPIKE_S,
        async start(stack) {
          // One spike after the other: a frozen worker makes no partner calls to fail.
          stack.partner.faults.add({ sourceId: stack.source, kind: 'status', status: 503, times: 1_000_000 });
          await stack.startRuns(datesFrom(0, 6));
          await sleep(SPIKE_S * 1000);
          stack.partner.faults.clear();
          stack.worker.child.kill('SIGSTOP');
          await stack.startRuns(datesFrom(10, 6));
          return { recover: () => void stack.worker.child.kill('SIGCONT') };
        },
      });
    },
  );
});
