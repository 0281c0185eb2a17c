// R8 (issue 35, 1b): the retry budget counts only calls that repeat one an earlier attempt asked
// the partner for. A page step whose first attempt fails on our own database before its partner
// call (the budget's admission waits on a lock past lock_timeout: 55P03, DatabaseUnavailable)
// makes its first partner call on a later attempt, and that call is no retry; a step whose first
// call got a 503 makes a retry of its next one. The budget's own counts (`downstream_calls`) and
// the partner's ledger are the judges. On real processes: a `durable-fetch worker`, the shared
// Temporal dev server, a cloned database and the demo partner. Source ids start with `rbd-`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { startFetch } from '../client/start-fetch.ts';
import { SESSION_BOUNDS } from '../db/limits.ts';
import { createDownstream } from './helpers/breaker-watch.ts';
import { createSource } from './helpers/deps.ts';
import { scrapeMetrics } from './helpers/metrics.ts';
import { waitFor } from './helpers/outbox.ts';
import { retryFlags } from './helpers/partner-calls.ts';
import { metricsUrlOf, within } from './helpers/process.ts';
import { useWorkerStack } from './helpers/worker-stack.ts';
import { engineConnection } from '../db/pool-config.ts';

/** The breaker out of play: only the budget's counts matter here. */
const NO_BREAKER = { failureRate: 1, minCalls: 100_000 };
const DB_DS = 'rbd-db';
const FAIL_DS = 'rbd-503';
const DATE = '2026-10-11';
/**
 * A step's attempt waits lock_timeout on the held lock, then retries after at most the preset's
 * first backoff (1 s); the rest is a one-page run. Generous: a loaded 2-core machine.
 */
const WAIT_MS = 20 * SESSION_BOUNDS.lockTimeoutMs;
const DB_RETRIES =
  'durable_fetch_activity_retries_total{activity="fetchPage",error_type="DatabaseUnavailable"}';

const stack = useWorkerStack({
  name: 'retry-budget-database',
  records: 30, // one page of one partner call per run
  // The cleanup pass would prune the counts this test reads (and meet the held rows).
  env: { DURABLE_FETCH_CLEANUP_INTERVAL_MS: '0' },
});

/** What the budget counted for `downstream`: calls and retries. */
async function counted(downstream: string): Promise<{ calls: number; retries: number }> {
  const [row] = await stack.db.prisma.$queryRaw<{ calls: number; retries: number }[]>`
    SELECT COALESCE(sum(calls), 0)::int AS calls, COALESCE(sum(retries), 0)::int AS retries
      FROM downstream_calls WHERE downstream = ${downstream}`;
  return row ?? assert.fail('no counts');
}

/** The failure type Temporal holds for the pending fetchPage of `workflowId`, if any. */
async function lastFetchFailure(workflowId: string): Promise<string | null | undefined> {
  const { raw } = await stack.client.workflow.getHandle(workflowId).describe();
  const fetch = raw.pendingActivities?.find((a) => a.activityType?.name === 'fetchPage');
  return fetch?.lastFailure?.applicationFailureInfo?.type;
}

describe('retry budget: only calls meant for the partner count (R8)', { timeout: 3 * WAIT_MS }, () => {
  it("a page step's database failure before its partner call spends no retry budget; a 503 before its next call does", async () => {
    const { prisma } = stack.db;
    for (const id of [DB_DS, FAIL_DS]) await createDownstream(prisma, { id, breaker: NO_BREAKER });
    // Page fetches as activity tasks: their heartbeat details carry `partnerAsked` to the next
    // attempt. A local fetch (the default) has none, and counts every attempt after the first.
    const tasks = { localFetch: false };
    await createSource(prisma, 'rbd-db-a', stack.partner.url, { downstream: DB_DS, ...tasks });
    await createSource(prisma, 'rbd-503-a', stack.partner.url, { downstream: FAIL_DS, ...tasks });
    stack.partner.faults.add({ sourceId: 'rbd-503-a', kind: 'status', status: 503, times: 1 });
    const metricsUrl = await metricsUrlOf(stack.worker);
    const before = (await scrapeMetrics(metricsUrl)).get(DB_RETRIES) ?? 0;

    // Our database failing the step before its partner call: the budget's per-second count rows of
    // DB_DS for the next minutes, inserted by a transaction held open, so that every admission to
    // DB_DS waits on them until lock_timeout (55P03).
    const hold = new pg.Client(engineConnection(stack.db.url));
    await hold.connect();
    let holding = true;
    try {
      await hold.query('BEGIN');
      await hold.query(
        `INSERT INTO downstream_calls (downstream, second, calls, retries, failures)
         SELECT $1, date_trunc('second', now()) + make_interval(secs => g), 0, 0, 0
           FROM generate_series(-5, 600) g`,
        [DB_DS],
      );
      const ctx = { temporal: stack.client, prisma, taskQueue: stack.taskQueue };
      const [held, failed] = await Promise.all(
        ['rbd-db-a', 'rbd-503-a'].map((sourceId) =>
          startFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' }),
        ),
      );
      assert.ok(held && failed);
      await waitFor(
        async () => (await lastFetchFailure(held.workflowId)) === 'DatabaseUnavailable',
        'an attempt of the held page step to fail as DatabaseUnavailable',
        WAIT_MS,
      );
      assert.equal(stack.partner.ledger.count({ sourceId: 'rbd-db-a' }), 0, 'no partner call yet');
      await hold.query('ROLLBACK');
      holding = false;

      const results = await within(Promise.all([held.handle.result(), failed.handle.result()]), WAIT_MS, () =>
        stack.worker.output(),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        ['succeeded', 'succeeded'],
      );
    } finally {
      if (holding) await hold.query('ROLLBACK').catch(() => undefined);
      await hold.end();
    }

    const dbRetries = ((await scrapeMetrics(metricsUrl)).get(DB_RETRIES) ?? 0) - before;
    const heldCalls = stack.partner.ledger.entries({ sourceId: 'rbd-db-a' });
    const failedCalls = stack.partner.ledger.entries({ sourceId: 'rbd-503-a' });
    const [heldCounted, failedCounted] = [await counted(DB_DS), await counted(FAIL_DS)];
    console.log(
      `# database retries of fetchPage ${dbRetries}; held step: partner calls ${heldCalls.length}, ` +
        `counted ${JSON.stringify(heldCounted)}; 503 step: partner statuses ${JSON.stringify(failedCalls.map((c) => c.status))}, ` +
        `counted ${JSON.stringify(failedCounted)}`,
    );
    assert.ok(dbRetries >= 1, 'the held step was retried on DatabaseUnavailable');
    // One call, the first the partner got for that page: counted as a call, not as a retry.
    assert.deepEqual(retryFlags(heldCalls), [false]);
    assert.deepEqual(heldCounted, { calls: 1, retries: 0 });
    // The 503's step: its second call repeats the first, and the budget counted it so.
    assert.deepEqual(
      failedCalls.map((c) => c.status),
      [503, 200],
    );
    assert.deepEqual(retryFlags(failedCalls), [false, true]);
    assert.deepEqual(failedCounted, { calls: 2, retries: 1 });
  });
});
