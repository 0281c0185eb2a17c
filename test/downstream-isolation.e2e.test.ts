// R8: isolation per downstream. A source whose downstream is isolated fetches its pages on that
// downstream's own task queue (`<task queue>-ds-<downstream>`), polled by every worker process with
// the downstream's own slots; so a slow partner holds only its downstream's slots, and runs of
// other downstreams go on. Every page fetch carries its source as fairness key, with its weight.
// On real processes: a `durable-fetch worker`, the shared Temporal dev server, a cloned database
// and the demo partner, whose ledger and faults are the judge. Source ids start with `dsi-`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSource } from './helpers/deps.ts';
import { createDownstream, datesFrom, pageFetches, startRuns } from './helpers/downstream-runs.ts';
import { fetchSteps } from './helpers/page-fetches.ts';
import { waitFor } from './helpers/outbox.ts';
import { within } from './helpers/process.ts';
import { useWorkerStack } from './helpers/worker-stack.ts';

/** The worker's own activity slots: fewer than the slow partner's runs. */
const MAIN_SLOTS = 3;
const SLOW_SLOTS = 2;
const SLOW_RUNS = 5;
/** A held call outlasts the test: only its downstream's slots are taken by it. */
const HOLD_MS = 300_000;

const stack = useWorkerStack({
  name: 'ds-iso',
  records: 80,
  env: {
    DURABLE_FETCH_WORKER_ACTIVITY_SLOTS: String(MAIN_SLOTS),
    HTTP_RESPONSE_TIMEOUT_MS: String(HOLD_MS),
    DURABLE_FETCH_DOWNSTREAM_REFRESH_MS: '1000',
  },
  beforeWorkers: async ({ db }) => {
    await createDownstream(db.prisma, { id: 'dsi-slow', isolated: true, maxConcurrentCalls: SLOW_SLOTS });
    await createDownstream(db.prisma, {
      id: 'dsi-fast',
      isolated: true,
      maxConcurrentCalls: 2,
      sourceWeights: { 'dsi-weighted': 3 },
    });
  },
});

/** Where and how each page fetch of the run was dispatched, by its history. */
const fetchDispatch = async (workflowId: string) =>
  (await pageFetches(stack.client, workflowId)).map(({ taskQueue, fairnessKey, fairnessWeight }) => ({
    taskQueue,
    fairnessKey,
    fairnessWeight,
  }));

const succeeded = async (runs: Awaited<ReturnType<typeof startRuns>>) => {
  const results = await within(Promise.all(runs.map((r) => r.handle.result())), 90_000, () =>
    stack.worker.output(),
  );
  assert.deepEqual(
    results.map((r) => r.status),
    runs.map(() => 'succeeded'),
  );
};

describe('downstream isolation (R8)', { concurrency: true, timeout: 110_000 }, () => {
  it("an isolated downstream's source fetches on the downstream's own queue with its weight; others on the workflow's queue, or locally by default", async () => {
    await createSource(stack.db.prisma, 'dsi-weighted', stack.partner.url, {
      pageSize: 50,
      downstream: 'dsi-fast',
    });
    // A source that fetches as activity tasks: on the workflow's queue, keyed; one left at the
    // default fetches locally, no task at all.
    await createSource(stack.db.prisma, 'dsi-shared', stack.partner.url, { pageSize: 50, localFetch: false });
    await createSource(stack.db.prisma, 'dsi-default', stack.partner.url, { pageSize: 50 });
    // Local fetches would bypass the downstream's queue, its slots and rate limits: not for it.
    await createSource(stack.db.prisma, 'dsi-local', stack.partner.url, {
      pageSize: 50,
      downstream: 'dsi-fast',
      localFetch: true,
    });
    const runs = [
      ...(await startRuns(stack, 'dsi-weighted', ['2025-05-01'])),
      ...(await startRuns(stack, 'dsi-shared', ['2025-05-01'])),
      ...(await startRuns(stack, 'dsi-local', ['2025-05-01'])),
      ...(await startRuns(stack, 'dsi-default', ['2025-05-01'])),
    ];
    await succeeded(runs);
    const [weighted, shared, local, byDefault] = await Promise.all(
      runs.map((r) => fetchDispatch(r.workflowId)),
    );
    assert.deepEqual(weighted, [
      { taskQueue: `${stack.taskQueue}-ds-dsi-fast`, fairnessKey: 'dsi-weighted', fairnessWeight: 3 },
      { taskQueue: `${stack.taskQueue}-ds-dsi-fast`, fairnessKey: 'dsi-weighted', fairnessWeight: 3 },
    ]);
    assert.deepEqual(shared, [
      { taskQueue: stack.taskQueue, fairnessKey: 'dsi-shared', fairnessWeight: 1 },
      { taskQueue: stack.taskQueue, fairnessKey: 'dsi-shared', fairnessWeight: 1 },
    ]);
    assert.deepEqual(local, [
      { taskQueue: `${stack.taskQueue}-ds-dsi-fast`, fairnessKey: 'dsi-local', fairnessWeight: 1 },
      { taskQueue: `${stack.taskQueue}-ds-dsi-fast`, fairnessKey: 'dsi-local', fairnessWeight: 1 },
    ]);
    assert.deepEqual(byDefault, [], 'no fetchPage activity task');
    const defaultRun = runs[3]?.workflowId ?? '';
    const steps = fetchSteps((await stack.client.workflow.getHandle(defaultRun).fetchHistory()).events ?? []);
    assert.deepEqual(
      steps.map((step) => step.local),
      [true, true],
      'its two page fetches were local activities',
    );
    assert.match(stack.worker.output(), /worker polling downstream task queues .*-ds-dsi-fast' \(2 slots\)/);
  });

  it("a slow partner holds only its downstream's slots: another downstream's runs complete while its calls hang", async () => {
    await createSource(stack.db.prisma, 'dsi-slow-src', stack.partner.url, {
      pageSize: 50,
      downstream: 'dsi-slow',
    });
    await createSource(stack.db.prisma, 'dsi-fast-src', stack.partner.url, {
      pageSize: 50,
      downstream: 'dsi-fast',
    });
    stack.partner.faults.add({ sourceId: 'dsi-slow-src', kind: 'delay', delayMs: HOLD_MS, times: SLOW_RUNS });
    const calledSlow = () => SLOW_RUNS - (stack.partner.faults.list()[0]?.remaining ?? 0);
    const slow = await startRuns(stack, 'dsi-slow-src', datesFrom('2025-06-01', SLOW_RUNS));
    await waitFor(() => calledSlow() === SLOW_SLOTS, "the slow partner holds its downstream's slots", 60_000);

    // More slow runs wait than the worker has slots of its own: on the shared queue they would hold all of them.
    const fast = await startRuns(stack, 'dsi-fast-src', datesFrom('2025-06-01', 4));
    await succeeded(fast);
    assert.equal(stack.partner.ledger.count({ sourceId: 'dsi-fast-src' }), 4 * 2, 'two pages per fast run');
    assert.equal(calledSlow(), SLOW_SLOTS, 'the slow partner got no more calls than its slots');
    assert.equal(stack.partner.ledger.count({ sourceId: 'dsi-slow-src' }), 0, 'its calls still hang');
    for (const run of slow) {
      assert.equal((await run.handle.describe()).status.name, 'RUNNING', 'the slow runs wait, unharmed');
    }
    await Promise.all(slow.map((r) => r.handle.terminate('test over')));
  });

  it('a downstream added while the worker runs gets its poller at the next refresh', async () => {
    await createDownstream(stack.db.prisma, { id: 'dsi-late', isolated: true, maxConcurrentCalls: 1 });
    await createSource(stack.db.prisma, 'dsi-late-src', stack.partner.url, {
      pageSize: 50,
      downstream: 'dsi-late',
    });
    const runs = await startRuns(stack, 'dsi-late-src', ['2025-07-01']);
    await succeeded(runs);
    const [dispatch] = await Promise.all(runs.map((r) => fetchDispatch(r.workflowId)));
    assert.ok(dispatch?.every((d) => d.taskQueue === `${stack.taskQueue}-ds-dsi-late`));
  });
});

describe('downstream pollers on shutdown (R8, R9)', { timeout: 60_000 }, () => {
  it("SIGTERM lets a downstream queue's running page fetch finish, then stops its poller with the worker: exit 0", async () => {
    await createSource(stack.db.prisma, 'dsi-stop-src', stack.partner.url, {
      pageSize: 50,
      downstream: 'dsi-fast',
    });
    stack.partner.faults.add({ sourceId: 'dsi-stop-src', kind: 'delay', delayMs: 3_000 });
    await startRuns(stack, 'dsi-stop-src', ['2025-08-01']);
    await waitFor(
      () => !stack.partner.faults.list().some((f) => f.sourceId === 'dsi-stop-src'),
      'the partner holds the page fetch',
      30_000,
    );
    const code = await stack.worker.stop('SIGTERM', 30_000);
    assert.equal(code, 0, stack.worker.output());
    assert.match(stack.worker.output(), /worker stopped/);
    assert.deepEqual(
      stack.partner.ledger.entries({ sourceId: 'dsi-stop-src' }).map((e) => e.status),
      [200],
      'the held call was answered, not abandoned',
    );
  });
});
