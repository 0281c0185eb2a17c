// R8 (issue 35, 1b): the retry budget counts only calls that repeat one an earlier attempt asked
// the partner for. A page step whose first attempt fails on our own database before its partner
// call (the budget's admission waits on a lock past lock_timeout: 55P03, DatabaseUnavailable)
// makes its first partner call on a later attempt, and that call is no retry; a step whose first
// call got a 503 makes a retry of its next one. The budget's own counts (`downstream_calls`) and
// the partner's ledger are the judges; with page fetches as local activities (the default) and as
// activity tasks. On real processes: a `durable-fetch worker`, the shared
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

/** The fetchPage attempts after a first one that failed as DatabaseUnavailable, by the worker's metrics. */
async function databaseRetries(metricsUrl: string): Promise<number> {
  return (await scrapeMetrics(metricsUrl)).get(DB_RETRIES) ?? 0;
}

describe('retry budget: only calls meant for the partner count (R8)', { timeout: 6 * WAIT_MS }, () => {
  // Either way a page is fetched: as a local activity (the default; the next attempt learns in the
  // worker whether the last one asked) and as an activity task (from its heartbeat details).
  for (const local of [true, false]) {
    const tag = local ? 'local' : 'task';
    it(`a page step's database failure before its partner call spends no retry budget; a 503 before its next call does: ${tag}`, async () => {
      const { prisma } = stack.db;
      const [heldDownstream, failedDownstream] = [`rbd-db-${tag}`, `rbd-503-${tag}`];
      const [heldSource, failedSource] = [`rbd-db-a-${tag}`, `rbd-503-a-${tag}`];
      for (const id of [heldDownstream, failedDownstream])
        await createDownstream(prisma, { id, breaker: NO_BREAKER });
      const dispatch = { localFetch: local };
      await createSource(prisma, heldSource, stack.partner.url, { downstream: heldDownstream, ...dispatch });
      await createSource(prisma, failedSource, stack.partner.url, {
        downstream: failedDownstream,
        ...dispatch,
      });
      stack.partner.faults.add({ sourceId: failedSource, kind: 'status', status: 503, times: 1 });
      const metricsUrl = await metricsUrlOf(stack.worker);
      const before = await databaseRetries(metricsUrl);

      // Our database failing the step before its partner call: the budget's per-second count rows of
      // heldDownstream for the next minutes, inserted by a transaction held open, so that every admission to
      // heldDownstream waits on them until lock_timeout (55P03).
      const hold = new pg.Client(engineConnection(stack.db.url));
      await hold.connect();
      let holding = true;
      try {
        await hold.query('BEGIN');
        await hold.query(
          `INSERT INTO downstream_calls (downstream, second, calls, retries, failures)
         SELECT $1, date_trunc('second', now()) + make_interval(secs => g), 0, 0, 0
           FROM generate_series(-5, 600) g`,
          [heldDownstream],
        );
        const ctx = { temporal: stack.client, prisma, taskQueue: stack.taskQueue };
        const [held, failed] = await Promise.all(
          [heldSource, failedSource].map((sourceId) =>
            startFetch(ctx, { sourceId, date: DATE, requestedBy: 'test' }),
          ),
        );
        assert.ok(held && failed);
        await waitFor(
          async () => (await databaseRetries(metricsUrl)) > before,
          'a retried attempt of the held page step to fail as DatabaseUnavailable',
          WAIT_MS,
        );
        assert.equal(stack.partner.ledger.count({ sourceId: heldSource }), 0, 'no partner call yet');
        await hold.query('ROLLBACK');
        holding = false;

        const results = await within(
          Promise.all([held.handle.result(), failed.handle.result()]),
          WAIT_MS,
          () => stack.worker.output(),
        );
        assert.deepEqual(
          results.map((r) => r.status),
          ['succeeded', 'succeeded'],
        );
      } finally {
        if (holding) await hold.query('ROLLBACK').catch(() => undefined);
        await hold.end();
      }

      const dbRetries = (await databaseRetries(metricsUrl)) - before;
      const heldCalls = stack.partner.ledger.entries({ sourceId: heldSource });
      const failedCalls = stack.partner.ledger.entries({ sourceId: failedSource });
      const [heldCounted, failedCounted] = [await counted(heldDownstream), await counted(failedDownstream)];
      console.log(
        `# ${tag}: database retries of fetchPage ${dbRetries}; held step: partner calls ${heldCalls.length}, ` +
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
  }
});
