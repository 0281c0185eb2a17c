// R8: fair shares on a downstream's task queue. Every page fetch carries its source as Temporal's
// fairness key, so a source with a backlog of 200 runs on an isolated downstream does not starve a
// second source on the same downstream: the second's runs get their partner calls after a few of
// the first's, not after its backlog. Bounded in work, not time: the first source's calls the
// partner served between a run of the second starting and that run's call (its backlog then is
// what a first-come-first-served queue would make the run wait for). Real `durable-fetch worker`,
// the demo partner's ledger as the judge. Source ids start with `dsf-`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSource } from './helpers/deps.ts';
import { callTimes, createDownstream, datesFrom, pageFetches, startRuns } from './helpers/downstream-runs.ts';
import { waitFor } from './helpers/outbox.ts';
import { within } from './helpers/process.ts';
import { useWorkerStack } from './helpers/worker-stack.ts';

const BIG = 'dsf-big';
const SMALL = 'dsf-small';
const BACKLOG = 200;
const SMALL_RUNS = 5;
/**
 * The downstream's slots: few, and each big call held a while, so its runs queue up in Temporal.
 * The backlog drains at SLOTS / HOLD_MS while the 200 runs are claimed: with 150 ms, a loaded
 * machine claimed so slowly that only 53 were left when the small runs came.
 */
const SLOTS = 2;
const HOLD_MS = 300;
/**
 * The backlog a small run must find for the test to tell fair shares from first come, first
 * served: eight times the most a small run waited for (5), so the bound below holds for fair
 * shares and fails for a queue that serves in order (it waits for all of the backlog).
 */
const MIN_BACKLOG = 40;
/**
 * The share of the big backlog ahead of it a small run may wait for. First come, first served, it
 * would wait for all of it (1); taking the keys in turn, for a few calls. Fairness is kept per
 * partition of a queue (Temporal's docs: tasks go to partitions at random, "this could interfere
 * with fairness"): over four partitions a small run waited for up to 50 of 172 calls, so the dev
 * server runs one (worker/stack/temporal-dev-server.ts), where it waits for 0–5. A bound far from both.
 */
const MAX_SHARE_AHEAD = 0.25;

const stack = useWorkerStack({
  name: 'ds-fair',
  // One page, one partner call per run.
  records: 40,
  beforeWorkers: async ({ db }) => {
    await createDownstream(db.prisma, { id: 'dsf-partner', isolated: true, maxConcurrentCalls: SLOTS });
  },
});

describe('downstream fairness (R8)', { timeout: 110_000 }, () => {
  it(`a source with a backlog of ${BACKLOG} runs does not starve a second source on the same downstream`, async () => {
    for (const id of [BIG, SMALL]) {
      await createSource(stack.db.prisma, id, stack.partner.url, { pageSize: 50, downstream: 'dsf-partner' });
    }
    stack.partner.faults.add({ sourceId: BIG, kind: 'delay', delayMs: HOLD_MS, times: BACKLOG });
    const big = await startRuns(stack, BIG, datesFrom('2024-01-01', BACKLOG));
    // Every big run claimed (its page fetch queued next) while its first calls go through.
    const claimed = () =>
      stack.db.prisma.fetchRun.count({ where: { sourceId: BIG, status: { not: 'queued' } } });
    await waitFor(async () => (await claimed()) === BACKLOG, 'every big run claimed', 60_000);

    const bigCalls = () => callTimes(stack.partner, BIG);
    const small = [];
    for (const date of datesFrom('2024-01-01', SMALL_RUNS)) {
      const at = Date.now();
      const [run] = await startRuns(stack, SMALL, [date]);
      assert.ok(run);
      small.push({ at, workflowId: run.workflowId, handle: run.handle });
    }
    await within(Promise.all(small.map((s) => s.handle.result())), 60_000, () => stack.worker.output());
    const smallCalls = callTimes(stack.partner, SMALL);
    assert.equal(smallCalls.length, SMALL_RUNS, 'one call per small run');

    const all = bigCalls();
    const waits = await Promise.all(
      small.map(async (s, i) => {
        const call = smallCalls[i] as number;
        const [fetch] = await pageFetches(stack.client, s.workflowId);
        const queued = fetch?.scheduledAt ?? Number.NaN;
        return {
          ms: call - queued,
          msFromStart: call - s.at,
          // The big runs not yet called when the small run's fetch was queued, and those called
          // before it: a first-come-first-served queue would have made it wait for all of them.
          backlog: BACKLOG - all.filter((t) => t <= queued).length,
          ahead: all.filter((t) => t > queued && t < call).length,
        };
      }),
    );
    const left = BACKLOG - all.filter((t) => t <= (smallCalls.at(-1) as number)).length;
    console.log(
      `# ${SLOTS} slots, ${HOLD_MS} ms a big call; each small run's call came after ` +
        waits
          .map((w) => `${w.ahead} of ${w.backlog} big runs (${w.ms} ms; ${w.msFromStart} ms from its start)`)
          .join(', ') +
        `; big runs still waiting behind the last small call: ${left}`,
    );
    for (const w of waits) {
      assert.ok(w.backlog >= MIN_BACKLOG, `a real backlog ahead of the small run: ${w.backlog} big runs`);
      assert.ok(
        w.ahead <= MAX_SHARE_AHEAD * w.backlog,
        `a small run waited for ${w.ahead} of ${w.backlog} big calls`,
      );
    }

    // The big runs are not needed any more: end them rather than leave them to the shared server.
    await Promise.all(big.map((b) => b.handle.terminate('test over').catch(() => undefined)));
  });
});
