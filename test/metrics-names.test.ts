// Metric names and labels as Prometheus users expect (issue 37): the default process/Node.js
// metrics under their standard names, counters named `_total` and gauges never, labels from a
// documented allow-list (docs/operations.md), and no series created before it is observed.
// Pure: builds the registry in memory, no services.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Metric } from 'prom-client';
import {
  createMetrics,
  errorTypeLabel,
  observeDownstream,
  observeRunStarted,
} from '../runtime/metrics/metrics.ts';

/** The standard names stock Node.js dashboards query. */
const STANDARD = [
  'process_cpu_seconds_total',
  'process_resident_memory_bytes',
  'process_start_time_seconds',
  'nodejs_heap_size_used_bytes',
  'nodejs_eventloop_lag_seconds',
];

/**
 * Every label our metrics may carry, each with a bounded set of values (docs/operations.md's
 * metrics table says the bound of each).
 */
const LABEL_ALLOW_LIST = new Set([
  'source', // configured sources
  'job_type', // registered job types
  'status', // succeeded, dead_lettered, cancelled
  'error_type', // contract/error-types.ts, `other`, or empty
  'error_class', // retryable error types or `other`
  'activity', // registered activity names
  'task_queue', // the deployment's task queue and one per isolated downstream
  'type', // workflow, activity
  'dependency', // database, temporal
  'sink', // configured outbox sinks, `none`
  'kind', // outbox
  'outcome', // ok, error; stuck-run settlements: a fixed list
  'downstream', // configured downstreams
  'state', // closed, open, half_open
  'forced', // true, false
  'from', // breaker states
  'to', // breaker states
  'reason', // open, forced_open, trials_busy, retry_budget
]);

/** prom-client's own Node.js gauges whose standard names end in `_total` (not ours to rename). */
const STANDARD_GAUGES_NAMED_TOTAL = new Set([
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
]);

async function families() {
  const metrics = createMetrics();
  return { metrics, json: await metrics.registry.getMetricsAsJSON() };
}

/** Our metrics (prefixed `durable_fetch_`), with the label names each was declared with. */
function ours(metrics: ReturnType<typeof createMetrics>) {
  return metrics.registry
    .getMetricsAsArray()
    .filter((m) => m.name.startsWith('durable_fetch_'))
    .map((m) => m as unknown as Metric & { name: string; labelNames: readonly string[] });
}

describe('metric names (issue 37)', () => {
  it('the default process and Node.js metrics carry their standard, unprefixed names', async () => {
    const names = new Set((await families()).json.map((m) => m.name));
    for (const name of STANDARD) assert.ok(names.has(name), `${name} is exported`);
    assert.deepEqual(
      [...names].filter((n) => n.startsWith('durable_fetch_process_')),
      [],
      'no prefixed copies',
    );
  });

  it('no gauge of ours ends in _total, every counter does, rates are named per second', async () => {
    const { json } = await families();
    const gauges = json.filter((m) => String(m.type) === 'gauge').map((m) => m.name);
    assert.deepEqual(
      gauges.filter((n) => n.endsWith('_total') && !STANDARD_GAUGES_NAMED_TOTAL.has(n)),
      [],
    );
    const counters = json.filter((m) => String(m.type) === 'counter').map((m) => m.name);
    assert.ok(counters.length > 0);
    assert.deepEqual(
      counters.filter((n) => !n.endsWith('_total')),
      [],
    );
    assert.deepEqual(
      json.map((m) => m.name).filter((n) => /_rate$/.test(n)),
      [],
      'a rate gauge says its unit (_per_second)',
    );
  });

  it('every label of our metrics is on the documented allow-list', async () => {
    const { metrics } = await families();
    const outside: string[] = [];
    for (const metric of ours(metrics)) {
      for (const label of metric.labelNames)
        if (!LABEL_ALLOW_LIST.has(label)) outside.push(`${metric.name}{${label}}`);
    }
    assert.deepEqual(outside, []);
  });

  it('a labelled metric has no series before its first observation', async () => {
    const { metrics } = await families();
    const seriesOf = async (name: string) =>
      (await metrics.registry.getSingleMetric(name)!.get()).values.map((v) => v.labels);
    const labelled = async () => {
      const found: string[] = [];
      for (const metric of ours(metrics)) {
        if (metric.labelNames.length === 0) continue;
        const values = (await metric.get()).values;
        if (values.length > 0) found.push(metric.name);
      }
      return found;
    };
    assert.deepEqual(await labelled(), [], 'a fresh registry holds no labelled series');

    // A claimed run counts its start only: no finished or partner-call series per status,
    // error type or outcome before one happens.
    observeRunStarted(metrics, 'acme', 'fetch-records');
    assert.deepEqual(await labelled(), ['durable_fetch_runs_started_total']);

    // A successful partner call creates its own series, not the error one.
    observeDownstream(metrics, 'acme', true);
    assert.deepEqual(await seriesOf('durable_fetch_downstream_requests_total'), [
      { source: 'acme', outcome: 'ok' },
    ]);
  });

  it('error types outside the contract are counted as other (a bounded label)', () => {
    assert.equal(errorTypeLabel('RateLimited'), 'RateLimited');
    assert.equal(errorTypeLabel('SomeJobsOwnError'), 'other');
    assert.equal(errorTypeLabel(null), '');
  });
});
