// The Grafana dashboard as code (issue 40): the committed ops/grafana/durable-fetch.json is what
// ops/dashboard/dashboard.ts generates, every panel's query is PromQL promtool accepts, and every
// metric a panel or variable names is one a real `durable-fetch worker` exports (scraped after a
// run, so the Temporal SDK's metrics are there too). Each check is shown to fail on a planted
// mistake: a broken expression, a made-up metric name.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startFetch } from '../client/start-fetch.ts';
import { buildDashboard, panelQueries } from '../ops/dashboard/dashboard.ts';
import { DASHBOARD_FILE } from '../ops/dashboard/generate.ts';
import { resolvePromtool } from '../scripts/promtool.ts';
import { createSource } from './helpers/deps.ts';
import { createMetrics } from '../runtime/metrics/metrics.ts';
import {
  expandVariables,
  familyLabels,
  labelsUsed,
  metricFamilies,
  metricNames,
  missingMetric,
} from './helpers/promql.ts';
import { useWorkerStack } from './helpers/worker-stack.ts';

interface Model {
  panels?: unknown[];
  templating?: { list?: { type: string; name: string; query?: unknown }[] };
}

const generated = (): Model => JSON.parse(JSON.stringify(buildDashboard())) as Model;

/** The label variables (`label_values(metric, label)`) of a dashboard: name, metric and label. */
function labelVariables(model: Model): { name: string; metric: string; label: string }[] {
  return (model.templating?.list ?? [])
    .filter((v) => v.type === 'query')
    .map((v) => {
      const m = /^label_values\((\w+),\s*(\w+)\)$/.exec(String(v.query));
      assert.ok(m, `variable ${v.name}: query ${JSON.stringify(v.query)} is not label_values(metric, label)`);
      return { name: v.name, metric: m[1]!, label: m[2]! };
    });
}

/** Every panel query with the variables expanded, as Prometheus would receive it. */
function expandedQueries(model: Model): { panel: string; expr: string }[] {
  const vars = labelVariables(model).map((v) => v.name);
  return panelQueries(model).map((q) => ({ panel: q.panel, expr: expandVariables(q.expr, vars) }));
}

function runPromtool(promtool: string, args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(promtool, args, { timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

/** Each metric name `exprs` use that `exposition` does not hold, with the panel that uses it. */
function unexported(exprs: { panel: string; expr: string }[], exposition: string): string[] {
  const families = metricFamilies(exposition);
  return exprs.flatMap(({ panel, expr }) =>
    metricNames(expr).flatMap((name) => {
      const why = missingMetric(name, families);
      return why ? [`${panel}: ${why}`] : [];
    }),
  );
}

/**
 * Each label a query matches on or groups by that its metrics do not carry: the labels seen on the
 * worker's series, those our registry declares (a labelled series appears only once observed),
 * `le` on a histogram's buckets, and the `instance` and `job` Prometheus adds. A grouping label
 * must be on at least one metric of the query.
 */
function unknownLabels(exprs: { panel: string; expr: string }[], exposition: string): string[] {
  const families = metricFamilies(exposition);
  const seen = familyLabels(exposition);
  const declared = new Map(
    createMetrics()
      .registry.getMetricsAsArray()
      .map((m) => [m.name, (m as unknown as { labelNames: readonly string[] }).labelNames] as const),
  );
  const known = (name: string) => {
    const family = families.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    const labels = new Set(['instance', 'job', ...(seen.get(family) ?? []), ...(declared.get(family) ?? [])]);
    if (name.endsWith('_bucket')) labels.add('le');
    return labels;
  };
  return exprs.flatMap(({ panel, expr }) => {
    const { selectors, grouping } = labelsUsed(expr);
    const found = selectors.flatMap((s) =>
      s.labels.filter((l) => !known(s.metric).has(l)).map((l) => `${panel}: ${s.metric} has no label ${l}`),
    );
    const all = metricNames(expr).map(known);
    for (const l of grouping)
      if (!all.some((k) => k.has(l))) found.push(`${panel}: no metric of the query has a label ${l}`);
    return found;
  });
}

describe('dashboard: generated', () => {
  it('dashboard: the committed ops/grafana/durable-fetch.json is what the generator produces', async () => {
    const committed = JSON.parse(await readFile(DASHBOARD_FILE, 'utf8')) as unknown;
    assert.deepEqual(
      committed,
      generated(),
      'ops/grafana/durable-fetch.json differs from ops/dashboard/dashboard.ts: run `npm run dashboard` and commit the file',
    );
  });

  it('dashboard: every item of issue 40 has a panel, and every panel says what it means', () => {
    const model = generated();
    const used = new Set(expandedQueries(model).flatMap((q) => metricNames(q.expr)));
    const wanted = {
      'backlog per task queue': 'durable_fetch_task_queue_backlog',
      'oldest age per task queue': 'durable_fetch_task_queue_oldest_age_seconds',
      arrival: 'durable_fetch_task_queue_tasks_added_per_second',
      completion: 'durable_fetch_task_queue_tasks_dispatched_per_second',
      'runs by outcome': 'durable_fetch_runs_finished_total',
      retries: 'durable_fetch_activity_retries_total',
      'dead letters': 'durable_fetch_dead_letters_open',
      'outbox lag': 'durable_fetch_outbox_oldest_pending_age_seconds',
      'compensations needing a human': 'durable_fetch_compensations_needs_manual',
      'partner calls and errors per source': 'durable_fetch_downstream_requests_total',
      'calls refused per downstream': 'durable_fetch_breaker_refused_calls_total',
      'breaker state': 'durable_fetch_breaker_state',
      'retry budget': 'durable_fetch_retry_budget_exhausted_total',
      'SDK slots used': 'temporal_worker_task_slots_used',
      'SDK slots available': 'temporal_worker_task_slots_available',
    };
    const lacking = Object.entries(wanted).filter(([, metric]) => !used.has(metric));
    assert.deepEqual(lacking, [], 'items of issue 40 with no panel querying their metric');
    const panels = (model.panels ?? []) as { type: string; title?: string; description?: string }[];
    const bare = panels.filter((p) => p.type !== 'row' && (p.description ?? '').length < 80);
    assert.deepEqual(
      bare.map((p) => p.title),
      [],
      'panels without a description of what they mean',
    );
    const variables = (model.templating?.list ?? []).map((v) => `${v.type}:${v.name}`);
    assert.deepEqual(variables, [
      'datasource:datasource',
      'query:task_queue',
      'query:source',
      'query:downstream',
    ]);
  });
});

describe('dashboard: PromQL', () => {
  let promtool: string;
  let dir: string;
  before(async () => {
    promtool = await resolvePromtool({ log: (line) => console.log(`[dashboard.test] ${line}`) });
    dir = await mkdtemp(path.join(os.tmpdir(), 'df-dashboard-'));
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** `promtool check rules` over one recording rule per expression. */
  async function checkRules(exprs: string[]) {
    const file = path.join(dir, 'panels.yml');
    const rules = exprs.map(
      (expr, i) => `      - record: dashboard_panel_${i}\n        expr: ${JSON.stringify(expr)}`,
    );
    await writeFile(file, ['groups:', '  - name: dashboard', '    rules:', ...rules, ''].join('\n'));
    return runPromtool(promtool, ['check', 'rules', file]);
  }

  it('dashboard: promtool accepts every panel query (variables expanded) and counts them all', async () => {
    const exprs = expandedQueries(generated()).map((q) => q.expr);
    assert.ok(exprs.length >= 25, `only ${exprs.length} queries`);
    const run = await checkRules(exprs);
    assert.equal(run.code, 0, run.output);
    assert.match(run.output, new RegExp(`SUCCESS: ${exprs.length} rules found`));
  });

  it('dashboard: the PromQL check fails on a broken expression', async () => {
    const exprs = expandedQueries(generated()).map((q) => q.expr);
    const broken = [...exprs, 'sum by (source (rate(durable_fetch_runs_started_total[5m]))'];
    const run = await checkRules(broken);
    assert.notEqual(run.code, 0, run.output);
  });

  it('dashboard: a variable the dashboard does not define fails the expansion', () => {
    assert.throws(() => expandVariables('up{source=~"$sorce"}', ['source']), /unknown variable \$sorce/);
    assert.equal(
      expandVariables('rate(x{a=~"${source}"}[$__rate_interval])', ['source']),
      'rate(x{a=~".*"}[5m])',
    );
  });

  it('dashboard: the metric-name extractor skips functions, keywords, labels, values and numbers', () => {
    const cases: [string, string[]][] = [
      ['up', ['up']],
      [
        'histogram_quantile(0.95, sum by (le, source) (rate(a_bucket{source=~".*",x="max"}[5m])))',
        ['a_bucket'],
      ],
      ['sum(rate(a_total[5m])) by (job) / on (job) group_left (team) b_info', ['a_total', 'b_info']],
      ['max without (instance) (c) > 1e3 and d offset 5m unless e == bool 2', ['c', 'd', 'e']],
      ['time() - max by (source) (f_seconds)', ['f_seconds']],
      ['avg_over_time(max by (q) (g)[10m:1m]) < 0.5 or vector(0)', ['g']],
      ['count_values("value", h) or label_replace(i, "dst", "$1", "src", "(.*)")', ['h', 'i']],
      ['{__name__="j_total", k="v"}', ['j_total']],
      ['topk(3, sum by (by_name) (k:recorded:rate5m))', ['k:recorded:rate5m']],
      ['3 * l or 0 * max by (downstream) (m{state="open"})', ['l', 'm']],
    ];
    for (const [expr, names] of cases) assert.deepEqual(metricNames(expr), names, expr);
    assert.deepEqual(
      labelsUsed('sum by (le, source) (rate(a_bucket{source=~"x=y", status!="ok"}[5m])) / on(job) b'),
      {
        selectors: [{ metric: 'a_bucket', labels: ['source', 'status'] }],
        grouping: ['le', 'source', 'job'],
      },
    );
  });
});

describe('dashboard: metrics a real worker exports', () => {
  const stack = useWorkerStack({ name: 'dashboard', records: 120 });
  let exposition = '';

  before(async () => {
    const [, url] = await stack.worker.waitFor(/metrics at (http:\S+)/, 60_000);
    await createSource(stack.db.prisma, 'dash-src', stack.partner.url);
    const run = await startFetch(
      { temporal: stack.client, prisma: stack.db.prisma, taskQueue: stack.taskQueue },
      { sourceId: 'dash-src', date: '2026-09-01', requestedBy: 'test' },
    );
    assert.equal((await run.handle.result()).status, 'succeeded');
    // The SDK creates a family on its first observation: wait (bounded) until the run's workflow
    // task latency is there, so the scrape is of a worker that has done work.
    for (let i = 0; i < 30; i++) {
      exposition = await (await fetch(url!)).text();
      if (exposition.includes('temporal_workflow_task_schedule_to_start_latency_bucket')) break;
      await sleep(1_000);
    }
  });

  it('dashboard: every metric a panel or variable queries is exported by a worker', () => {
    const model = generated();
    const exprs = [
      ...expandedQueries(model),
      ...labelVariables(model).map((v) => ({
        panel: `variable ${v.name}`,
        expr: `${v.metric}{${v.label}=~".*"}`,
      })),
    ];
    const withoutMetric = exprs.filter((q) => metricNames(q.expr).length === 0);
    assert.deepEqual(withoutMetric, [], 'queries that select no metric');
    assert.deepEqual(unexported(exprs, exposition), []);
    assert.deepEqual(unknownLabels(exprs, exposition), []);
  });

  it('dashboard: the label check fails on a misspelt matcher or grouping label', () => {
    assert.deepEqual(
      unknownLabels(
        [
          { panel: 'planted', expr: 'sum(rate(durable_fetch_runs_finished_total{sorce=~".*"}[5m]))' },
          { panel: 'planted', expr: 'max by (taskqueue) (durable_fetch_task_queue_backlog)' },
          {
            panel: 'planted',
            expr: 'sum by (worker_type) (temporal_worker_task_slots_used{task_queue=~".*"})',
          },
        ],
        exposition,
      ),
      [
        'planted: durable_fetch_runs_finished_total has no label sorce',
        'planted: no metric of the query has a label taskqueue',
      ],
    );
  });

  it('dashboard: the check fails on a made-up name and on a histogram queried by its bare name', () => {
    assert.deepEqual(
      unexported(
        [
          { panel: 'planted', expr: 'sum(rate(durable_fetch_runs_begun_total[5m]))' },
          { panel: 'planted', expr: 'max(temporal_worker_task_slots_idle)' },
          { panel: 'planted', expr: 'rate(durable_fetch_run_duration_seconds[5m])' },
          { panel: 'planted', expr: 'rate(durable_fetch_outbox_pending_bucket[5m])' },
        ],
        exposition,
      ),
      [
        'planted: durable_fetch_runs_begun_total is not exported',
        'planted: temporal_worker_task_slots_idle is not exported',
        'planted: durable_fetch_run_duration_seconds is a histogram: query its _bucket, _sum or _count',
        'planted: durable_fetch_outbox_pending_bucket is not exported',
      ],
    );
  });
});
