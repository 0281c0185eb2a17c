/**
 * The durable-fetch Grafana dashboard, as code (issue 40): one row per question an operator asks
 * (is work piling up, how do runs end, is the outbox keeping up, what needs a human, are partners
 * failing, are breakers holding calls back, are the workers saturated), each panel a PromQL query
 * over the metrics a worker exports (runtime/metrics/*.ts, and the Temporal SDK's appended to the
 * same /metrics). `npm run dashboard` writes it to ops/grafana/durable-fetch.json;
 * test/dashboard.test.ts checks the committed file is this code's output, every query parses, and
 * every metric it names is exported by a real worker.
 *
 * Gauges sampled from PostgreSQL or Temporal are exported by every worker with the same value, so
 * they are aggregated with `max`, as ops/alerts.yml does; counters are per process, so `sum`.
 */
import * as common from '@grafana/grafana-foundation-sdk/common';
import {
  type Dashboard,
  DashboardBuilder,
  DashboardCursorSync,
  DatasourceVariableBuilder,
  MappingType,
  QueryVariableBuilder,
  RowBuilder,
  ThresholdsConfigBuilder,
  ThresholdsMode,
  type Threshold,
  VariableRefresh,
  VariableSort,
  type ValueMapping,
} from '@grafana/grafana-foundation-sdk/dashboard';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import * as stat from '@grafana/grafana-foundation-sdk/stat';
import * as timeseries from '@grafana/grafana-foundation-sdk/timeseries';

/** The dashboard's uid: a provisioned copy and an imported one land on the same URL. */
export const DASHBOARD_UID = 'durable-fetch';

/** Every panel's data source: the one the `datasource` variable picks. */
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

/** The template variables' matchers, `.*` when "All" is picked. */
const TQ = 'task_queue=~"$task_queue"';
const SRC = 'source=~"$source"';
const DS = 'downstream=~"$downstream"';

/** One query of a panel: its PromQL and the legend of each series it returns. */
interface Query {
  expr: string;
  legend: string;
}

/** A panel as this file describes it; {@link panelBuilder} turns it into the SDK's builder. */
interface PanelSpec {
  kind: 'timeseries' | 'stat';
  title: string;
  /** What the panel means and what to do when it looks bad (shown on the panel's ⓘ). */
  description: string;
  queries: Query[];
  /** A Grafana unit id: `s`, `short`, `percentunit`, `opm` (per minute), `reqps`… */
  unit: string;
  /** Grid columns out of 24; default 8. */
  width?: number;
  /** The value from which the panel turns red (and, when given, amber). */
  red?: number;
  amber?: number;
  mappings?: ValueMapping[];
  /** Stacked series (parts of one whole, e.g. runs by outcome). */
  stacked?: boolean;
}

interface RowSpec {
  title: string;
  panels: PanelSpec[];
}

const RATE = '$__rate_interval';

/** The rows, top to bottom. */
export const ROWS: RowSpec[] = [
  {
    title: 'Task queues: is work piling up?',
    panels: [
      {
        kind: 'timeseries',
        title: 'Backlog per task queue',
        description:
          "Tasks waiting in each task queue (Temporal's approximate count): the deployment's queue and one per isolated downstream (`<queue>-ds-<downstream>`, activity tasks only). A short rise that drains is normal (a schedule firing, a deploy). A backlog that stays while slots are free means no worker polls that queue; with slots full, add workers or raise DURABLE_FETCH_WORKER_ACTIVITY_SLOTS. docs/operations.md#backlog.",
        queries: [
          {
            expr: `max by (task_queue, type) (durable_fetch_task_queue_backlog{${TQ}})`,
            legend: '{{task_queue}} {{type}}',
          },
        ],
        unit: 'short',
      },
      {
        kind: 'timeseries',
        title: 'Oldest waiting task, age',
        description:
          'Age of the oldest task waiting in each task queue. It resets to 0 when a worker takes it. An age that keeps climbing (about 1 s per second) means nothing takes tasks from that queue: DurableFetchBacklogAgeGrowing pages past 2 minutes and 10 minutes of growth. Check `durable-fetch status` and the pollers (`temporal task-queue describe`); docs/operations.md#backlog.',
        queries: [
          {
            expr: `max by (task_queue, type) (durable_fetch_task_queue_oldest_age_seconds{${TQ}})`,
            legend: '{{task_queue}} {{type}}',
          },
        ],
        unit: 's',
        red: 120,
      },
      {
        kind: 'timeseries',
        title: 'Arrival vs completion',
        description:
          'Tasks added to each queue per second (arrival) against tasks dispatched to workers per second (completion), as Temporal computes them (it exposes no counts). Dispatch below arrival for many minutes while a backlog exists means the backlog can only grow: DurableFetchCompletionBelowArrival warns after 15 minutes. Add workers or slots, or find what holds them (a slow partner: isolate its downstream).',
        queries: [
          {
            expr: `max by (task_queue, type) (durable_fetch_task_queue_tasks_added_per_second{${TQ}})`,
            legend: 'added {{task_queue}} {{type}}',
          },
          {
            expr: `max by (task_queue, type) (durable_fetch_task_queue_tasks_dispatched_per_second{${TQ}})`,
            legend: 'dispatched {{task_queue}} {{type}}',
          },
        ],
        unit: 'reqps',
      },
    ],
  },
  {
    title: 'Runs: how do they end?',
    panels: [
      {
        kind: 'timeseries',
        title: 'Runs finished by outcome',
        description:
          'Runs that ended per minute, by status: succeeded, dead_lettered, cancelled. dead_lettered above a tenth of the finished runs of a source for 10 minutes fires DurableFetchDeadLetterRatio: see the failure (`durable-fetch dlq list --source …`), pause the source if its partner is down, fix, then replay at a limited rate (docs/runbook.md#see-the-failure).',
        queries: [
          {
            expr: `sum by (status) (rate(durable_fetch_runs_finished_total{${SRC}}[${RATE}])) * 60`,
            legend: '{{status}}',
          },
        ],
        unit: 'opm',
        stacked: true,
      },
      {
        kind: 'timeseries',
        title: 'Runs started per source',
        description:
          'Runs claimed per minute (started, or taken up again by a retry or replay), by source. A source whose line stops while its schedule should fire: check the schedule (`durable-fetch schedules list`) and whether the source is paused.',
        queries: [
          {
            expr: `sum by (source) (rate(durable_fetch_runs_started_total{${SRC}}[${RATE}])) * 60`,
            legend: '{{source}}',
          },
        ],
        unit: 'opm',
      },
      {
        kind: 'timeseries',
        title: 'Run duration p95',
        description:
          '95th percentile of run duration (first claim to end) per source over the rate window. It climbs when a partner slows down, pages grow, or runs wait for retries or a breaker. Compare with the partner calls row before blaming the workers.',
        queries: [
          {
            expr: `histogram_quantile(0.95, sum by (le, source) (rate(durable_fetch_run_duration_seconds_bucket{${SRC}}[${RATE}])))`,
            legend: '{{source}}',
          },
        ],
        unit: 's',
      },
    ],
  },
  {
    title: 'Retries and dead letters',
    panels: [
      {
        kind: 'timeseries',
        title: 'Retries by activity and error type',
        description:
          'Activity attempts per minute that failed with a retryable error (a retry follows). A steady rate of RateLimited or UpstreamUnavailable means a partner is struggling: lower the schedule concurrency, ask for a higher limit, or pause the source while it is down (docs/operations.md#downstream-failing).',
        queries: [
          {
            expr: `sum by (activity, error_type) (rate(durable_fetch_activity_retries_total[${RATE}])) * 60`,
            legend: '{{activity}} {{error_type}}',
          },
        ],
        unit: 'opm',
      },
      {
        kind: 'timeseries',
        title: 'Runs waiting for a retry',
        description:
          'Runs in retry_wait now, by the error class that put them there (every worker samples the same table: max). Many RateLimited or UpstreamUnavailable for long: the partner is struggling; pause the source (docs/runbook.md#a-run-waiting-for-a-retry).',
        queries: [
          { expr: 'max by (error_class) (durable_fetch_runs_retry_wait)', legend: '{{error_class}}' },
        ],
        unit: 'short',
      },
      {
        kind: 'stat',
        title: 'Dead letters open',
        description:
          'Dead letters waiting for an operator. Above 0: read the failure (`durable-fetch dlq list`), fix the cause, then replay at a limited rate or discard (docs/runbook.md#see-the-failure).',
        queries: [{ expr: 'max(durable_fetch_dead_letters_open)', legend: 'open' }],
        unit: 'short',
        red: 1,
      },
    ],
  },
  {
    title: 'Outbox',
    panels: [
      {
        kind: 'timeseries',
        title: 'Outbox lag',
        description:
          'Age of the oldest unpublished outbox event, and the 99th percentile of write-to-publish time of the events published. The oldest age above a minute for 5 minutes fires DurableFetchOutboxLag: no publisher runs, one is stuck, or its sink fails (`durable-fetch outbox status`); a dead event holds its aggregate back (`outbox dead list`). docs/operations.md#outbox-lag.',
        queries: [
          { expr: 'max(durable_fetch_outbox_oldest_pending_age_seconds)', legend: 'oldest pending' },
          {
            expr: `histogram_quantile(0.99, sum by (le) (rate(durable_fetch_outbox_relay_lag_seconds_bucket[${RATE}])))`,
            legend: 'relay lag p99',
          },
        ],
        unit: 's',
        red: 60,
      },
      {
        kind: 'timeseries',
        title: 'Outbox pending',
        description:
          'Outbox events not yet published (including retrying and in flight). It should drain to near 0 between bursts; one that grows without bound means the publishers cannot keep up or a sink fails: start more publishers (claims are fenced), or fix the sink.',
        queries: [{ expr: 'max(durable_fetch_outbox_pending)', legend: 'pending' }],
        unit: 'short',
      },
      {
        kind: 'timeseries',
        title: 'Outbox deliveries by sink',
        description:
          'Events published, failed deliveries (retried) and dead events per minute, by sink; lease takeovers (a publisher died or stalled mid-claim). Dead above 0: `durable-fetch outbox dead list`, then `outbox dead requeue` once the cause is fixed. Takeovers beyond the odd crash: a publisher keeps stalling.',
        queries: [
          {
            expr: `sum by (sink) (rate(durable_fetch_outbox_published_total[${RATE}])) * 60`,
            legend: 'published {{sink}}',
          },
          {
            expr: `sum by (sink) (rate(durable_fetch_outbox_failed_total[${RATE}])) * 60`,
            legend: 'failed {{sink}}',
          },
          {
            expr: `sum by (sink) (rate(durable_fetch_outbox_dead_total[${RATE}])) * 60`,
            legend: 'dead {{sink}}',
          },
          {
            expr: `sum by (kind) (rate(durable_fetch_lease_takeovers_total[${RATE}])) * 60`,
            legend: 'lease takeovers {{kind}}',
          },
        ],
        unit: 'opm',
      },
    ],
  },
  {
    title: 'Needs a human',
    panels: [
      {
        kind: 'stat',
        title: 'Compensations needing a human',
        description:
          'Downstream actions in needs_manual: compensation gave up, and a person must settle each one with the partner, then record the outcome. Any value above 0 pages (DurableFetchCompensationsNeedManual); docs/runbook.md#handling-needs_manual.',
        queries: [{ expr: 'max(durable_fetch_compensations_needs_manual)', legend: 'needs_manual' }],
        unit: 'short',
        red: 1,
        width: 6,
      },
      {
        kind: 'stat',
        title: 'Credentials needing reauthorization',
        description:
          'OAuth2 credentials whose provider refused the refresh token: runs using them wait until an operator runs `credentials set` (they fail after about a day). Above 0 pages (DurableFetchCredentialNeedsReauthorization); docs/runbook.md#an-oauth2-credential-needs-reauthorization.',
        queries: [{ expr: 'max(durable_fetch_credentials_needing_reauthorization)', legend: 'credentials' }],
        unit: 'short',
        red: 1,
        width: 6,
      },
      {
        kind: 'stat',
        title: 'Stray effects and orphaned actions',
        description:
          'Strays: effects at a partner the ledger did not expect, not yet voided (the sweep voids them within a pass). Orphaned: downstream actions unsettled whose run has no live owner. Either above 0 for 10 minutes pages (DurableFetchStrayEffects, DurableFetchOrphanedActions): `durable-fetch compensations list --stray`, `durable-fetch reconcile --stuck`; docs/runbook.md#strays, #terminate.',
        queries: [
          { expr: 'max(durable_fetch_downstream_strays_unsettled)', legend: 'strays' },
          { expr: 'max(durable_fetch_orphaned_actions)', legend: 'orphaned' },
        ],
        unit: 'short',
        red: 1,
        width: 6,
      },
      {
        kind: 'stat',
        title: 'Stuck runs',
        description:
          'Runs whose workflow closed or is gone while their row still says running, that the sweep could not settle. Almost always 0; above 0 for 10 minutes warns (DurableFetchRunsStuck): `durable-fetch reconcile --stuck` says why (docs/runbook.md#stuck-runs).',
        queries: [{ expr: 'max(durable_fetch_runs_stuck)', legend: 'stuck' }],
        unit: 'short',
        red: 1,
        width: 6,
      },
    ],
  },
  {
    title: 'Partner calls',
    panels: [
      {
        kind: 'timeseries',
        title: 'Partner calls per source',
        description:
          'Calls to partners (pages, submissions) per minute, by source and outcome. Calls are counted per source; per downstream, see the refused calls in the breakers row. Over half failing for 10 minutes fires DurableFetchDownstreamFailing (docs/operations.md#downstream-failing).',
        queries: [
          {
            expr: `sum by (source, outcome) (rate(durable_fetch_downstream_requests_total{${SRC}}[${RATE}])) * 60`,
            legend: '{{source}} {{outcome}}',
          },
        ],
        unit: 'opm',
      },
      {
        kind: 'timeseries',
        title: 'Partner error ratio per source',
        description:
          "Share of each source's partner calls that failed over the rate window (no line: no calls). Above 0.5 for 10 minutes alerts. RateLimited: lower the concurrency; PermissionDenied: rotate the credentials; down: pause the source, and its downstream's breaker stops calls by itself (docs/runbook.md#a-partner-is-down).",
        queries: [
          {
            expr: `sum by (source) (rate(durable_fetch_downstream_requests_total{${SRC},outcome="error"}[${RATE}])) / sum by (source) (rate(durable_fetch_downstream_requests_total{${SRC}}[${RATE}]))`,
            legend: '{{source}}',
          },
        ],
        unit: 'percentunit',
        amber: 0.2,
        red: 0.5,
      },
      {
        kind: 'timeseries',
        title: 'Time since last successful partner call',
        description:
          "Seconds since each source's partner last answered successfully. It grows between scheduled runs, so read it against the schedule: over an hour while calls are made fires DurableFetchDownstreamFailing.",
        queries: [
          {
            expr: `time() - max by (source) (durable_fetch_downstream_last_success_timestamp_seconds{${SRC}})`,
            legend: '{{source}}',
          },
        ],
        unit: 's',
        red: 3600,
      },
    ],
  },
  {
    title: 'Circuit breakers and retry budgets',
    panels: [
      {
        kind: 'stat',
        title: 'Breaker state',
        description:
          "Each downstream's shared circuit breaker: closed (calls flow), half-open (trial calls), open (no calls; runs wait). Forced: an operator opened it (`breakers open`). Not closed for 10 minutes fires DurableFetchBreakerOpen: `durable-fetch breakers show <downstream>` says why; close a forced one once the partner is back (docs/runbook.md#a-partner-is-down).",
        queries: [
          {
            // One number a value mapping names: 0 closed, 1 half-open, 2 open, 5 forced open (an
            // operator only ever forces a breaker open). Processes sample the shared row at
            // different moments and may disagree for a sample: the worst state any reports wins
            // (`or` keeps both states' series, max picks). `or 0 * …` gives unforced ones 0.
            expr: `max by (downstream) (2 * durable_fetch_breaker_state{${DS},state="open"} or durable_fetch_breaker_state{${DS},state="half_open"}) + (3 * max by (downstream) (durable_fetch_breaker_state{${DS},state="open",forced="true"}) or 0 * max by (downstream) (durable_fetch_breaker_state{${DS}}))`,
            legend: '{{downstream}}',
          },
        ],
        unit: 'short',
        mappings: [
          {
            type: MappingType.ValueToText,
            options: {
              '0': { text: 'closed', color: 'green', index: 0 },
              '1': { text: 'half-open', color: 'yellow', index: 1 },
              '2': { text: 'open', color: 'red', index: 2 },
              '5': { text: 'open (forced)', color: 'red', index: 3 },
            },
          },
        ],
        width: 6,
      },
      {
        kind: 'timeseries',
        title: 'Breaker transitions and refused calls',
        description:
          'Breaker state changes per minute (from → to) and calls not made, by downstream and reason (open, forced_open, trials_busy, retry_budget). closed → open recurring: the partner is unwell. Refused calls while the partner should be up: look at `durable-fetch breakers show`.',
        queries: [
          {
            expr: `sum by (downstream, from, to) (rate(durable_fetch_breaker_transitions_total{${DS}}[${RATE}])) * 60`,
            legend: '{{downstream}} {{from}} → {{to}}',
          },
          {
            expr: `sum by (downstream, reason) (rate(durable_fetch_breaker_refused_calls_total{${DS}}[${RATE}])) * 60`,
            legend: 'refused {{downstream}} {{reason}}',
          },
        ],
        unit: 'opm',
        width: 9,
      },
      {
        kind: 'timeseries',
        title: 'Retries held back by the retry budget',
        description:
          "Retries per minute held back because their downstream's retry budget was spent: the partner fails more calls than the budget's share allows while its breaker stays closed, so runs slow down. Held back for 15 minutes fires DurableFetchRetryBudgetExhausted (docs/runbook.md#a-partner-is-down).",
        queries: [
          {
            expr: `sum by (downstream) (rate(durable_fetch_retry_budget_exhausted_total{${DS}}[${RATE}])) * 60`,
            legend: '{{downstream}}',
          },
        ],
        unit: 'opm',
        width: 9,
      },
    ],
  },
  {
    title: 'Workers (Temporal SDK)',
    panels: [
      {
        kind: 'timeseries',
        title: 'Task slot use',
        description:
          "Share of each worker type's task slots in use (workflow, activity, local activity), summed over the workers of each task queue. Near 100% with a backlog: the workers are saturated; add workers or raise DURABLE_FETCH_WORKER_ACTIVITY_SLOTS. Low with a backlog: the workers are not polling that queue (docs/operations.md#backlog).",
        queries: [
          {
            expr: `sum by (task_queue, worker_type) (temporal_worker_task_slots_used{${TQ}}) / (sum by (task_queue, worker_type) (temporal_worker_task_slots_used{${TQ}}) + sum by (task_queue, worker_type) (temporal_worker_task_slots_available{${TQ}}))`,
            legend: '{{task_queue}} {{worker_type}}',
          },
        ],
        unit: 'percentunit',
        amber: 0.8,
        red: 0.95,
      },
      {
        kind: 'timeseries',
        title: 'Workflow task schedule-to-start p95',
        description:
          'How long workflow tasks wait before a worker starts them (95th percentile), as the workers measure it. Rising with slots full: saturated workers; rising with slots free: too few pollers or a slow event loop (next panel).',
        queries: [
          {
            expr: `histogram_quantile(0.95, sum by (le, task_queue) (rate(temporal_workflow_task_schedule_to_start_latency_bucket{${TQ}}[${RATE}])))`,
            legend: '{{task_queue}}',
          },
        ],
        unit: 's',
      },
      {
        kind: 'timeseries',
        title: 'Health: dependencies and event loop',
        description:
          "The lowest dependency_up across processes (1: every process's last health sample reached it; 0: at least one did not — DurableFetchDatabaseUnreachable and DurableFetchTemporalUnreachable page after 2 minutes), and the worst p99 event-loop lag: Prisma and the Temporal worker share one loop, so a lag of seconds delays every task.",
        queries: [
          { expr: 'min by (dependency) (durable_fetch_dependency_up)', legend: '{{dependency}} up' },
          { expr: 'max(nodejs_eventloop_lag_p99_seconds)', legend: 'event loop lag p99 (s)' },
        ],
        unit: 'short',
      },
    ],
  },
];

/** Green from the bottom (Grafana's `null` step), then amber and red from their values. */
function thresholds(spec: PanelSpec) {
  const steps: Threshold[] = [{ value: null, color: 'green' }];
  if (spec.amber !== undefined) steps.push({ value: spec.amber, color: 'yellow' });
  if (spec.red !== undefined) steps.push({ value: spec.red, color: 'red' });
  return new ThresholdsConfigBuilder().mode(ThresholdsMode.Absolute).steps(steps);
}

/** A range query (stat panels too: they show the last value over a sparkline), refId A, B, … */
function target(query: Query, index: number) {
  return new DataqueryBuilder()
    .datasource(DATASOURCE)
    .refId(String.fromCharCode(65 + index))
    .expr(query.expr)
    .legendFormat(query.legend)
    .range();
}

/** The SDK builder of one panel; `id` is its place in the dashboard (Grafana wants ids unique). */
function panelBuilder(spec: PanelSpec, id: number) {
  const width = spec.width ?? 8;
  if (spec.kind === 'stat') {
    const p = new stat.PanelBuilder()
      .id(id)
      .title(spec.title)
      .description(spec.description)
      .datasource(DATASOURCE)
      .unit(spec.unit)
      .span(width)
      .height(6)
      .thresholds(thresholds(spec))
      .colorMode(common.BigValueColorMode.Background)
      .graphMode(common.BigValueGraphMode.Area)
      .reduceOptions(new common.ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false));
    if (spec.mappings) p.mappings(spec.mappings).graphMode(common.BigValueGraphMode.None);
    spec.queries.forEach((q, i) => p.withTarget(target(q, i)));
    return p;
  }
  const p = new timeseries.PanelBuilder()
    .id(id)
    .title(spec.title)
    .description(spec.description)
    .datasource(DATASOURCE)
    .unit(spec.unit)
    .min(0)
    .span(width)
    .height(8)
    .thresholds(thresholds(spec))
    .fillOpacity(10)
    .legend(
      new common.VizLegendOptionsBuilder()
        .showLegend(true)
        .displayMode(common.LegendDisplayMode.List)
        .placement(common.LegendPlacement.Bottom),
    )
    .tooltip(new common.VizTooltipOptionsBuilder().mode(common.TooltipDisplayMode.Multi));
  if (spec.red !== undefined) {
    p.thresholdsStyle(
      new common.GraphThresholdsStyleConfigBuilder().mode(common.GraphThresholdsStyleMode.Dashed),
    );
  }
  if (spec.stacked) p.stacking(new common.StackingConfigBuilder().mode(common.StackingMode.Normal));
  spec.queries.forEach((q, i) => p.withTarget(target(q, i)));
  return p;
}

/** A query variable over one label of one metric, multi-valued with "All" as `.*`. */
function labelVariable(name: string, label: string, metric: string, description: string) {
  return new QueryVariableBuilder(name)
    .label(label)
    .description(description)
    .datasource(DATASOURCE)
    .query(`label_values(${metric}, ${name})`)
    .definition(`label_values(${metric}, ${name})`)
    .refresh(VariableRefresh.OnTimeRangeChanged)
    .sort(VariableSort.AlphabeticalAsc)
    .multi(true)
    .includeAll(true)
    .allValue('.*')
    .current({ selected: true, text: ['All'], value: ['$__all'] });
}

/**
 * The dashboard as Grafana's JSON model. Pure: the same object on every call (the committed
 * ops/grafana/durable-fetch.json is compared with it).
 */
export function buildDashboard(): Dashboard {
  const builder = new DashboardBuilder('durable-fetch')
    .uid(DASHBOARD_UID)
    .description(
      'Scheduled fetch jobs on Temporal + PostgreSQL: task queues, runs, retries, dead letters, outbox, work for a human, partner calls, breakers and worker slots. Generated by ops/dashboard/dashboard.ts (npm run dashboard); do not edit in Grafana.',
    )
    .tags(['durable-fetch', 'temporal', 'generated'])
    .editable()
    .tooltip(DashboardCursorSync.Crosshair)
    .refresh('30s')
    .time({ from: 'now-3h', to: 'now' })
    .timezone('browser')
    .withVariable(
      new DatasourceVariableBuilder('datasource')
        .label('Prometheus')
        .description('The Prometheus that scrapes every durable-fetch worker and publisher.')
        .type('prometheus'),
    )
    .withVariable(
      labelVariable(
        'task_queue',
        'Task queue',
        'durable_fetch_task_queue_backlog',
        "The deployment's task queue and one per isolated downstream.",
      ),
    )
    .withVariable(
      labelVariable('source', 'Source', 'durable_fetch_runs_started_total', 'Configured sources.'),
    )
    .withVariable(
      labelVariable('downstream', 'Downstream', 'durable_fetch_breaker_state', 'Configured downstreams.'),
    );
  let id = 1;
  for (const row of ROWS) {
    builder.withRow(new RowBuilder(row.title).id(id++));
    for (const panel of row.panels) builder.withPanel(panelBuilder(panel, id++));
  }
  return builder.build();
}

/** Every PromQL expression of a dashboard's panels, with the panel's title (for messages). */
export function panelQueries(model: { panels?: unknown[] }): { panel: string; expr: string }[] {
  const out: { panel: string; expr: string }[] = [];
  const visit = (panels: unknown[] | undefined) => {
    for (const p of panels ?? []) {
      const panel = p as { title?: string; targets?: { expr?: string }[]; panels?: unknown[] };
      for (const t of panel.targets ?? []) if (t.expr) out.push({ panel: panel.title ?? '?', expr: t.expr });
      visit(panel.panels);
    }
  };
  visit(model.panels);
  return out;
}
