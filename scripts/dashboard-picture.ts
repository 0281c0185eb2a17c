/**
 * Draws docs/images/dashboard.png: the panels of ops/grafana/durable-fetch.json, each query run by
 * a real Prometheus over real traffic, drawn by this script in headless Chromium. No Grafana
 * server package installs here (not in Debian, npm or PyPI), so this is our own drawing of the
 * dashboard's queries and layout, not a Grafana screenshot; docs/dashboard.md says so.
 *
 * What runs: the test services (a Temporal dev server, a cloned database), the demo partner, one
 * `durable-fetch worker` and one `durable-fetch publisher`, Debian's Prometheus scraping both
 * every 2 s. Four sources: `pic-acme` healthy with slow pages, `pic-globex` whose partner is down
 * for half a minute of every two (retries; its downstream's breaker opens, trials, closes),
 * `pic-initech` whose partner rejects some runs' input (dead letters), `pic-umbrella`
 * rate-limited now and then. New
 * runs start every few seconds; the worker is killed for a while mid-way, so the backlog and the
 * oldest task's age climb, then drain when it is back.
 *
 * Usage: `npx tsx scripts/dashboard-picture.ts [--minutes 8]` (not part of `npm test`). Needs
 * Debian's prometheus and chromium (installed when missing, as root). Side effects: writes the PNG
 * (and the page's HTML beside it, under .build/), starts and stops its own processes.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import { startPartner } from '../partner/server.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { launchChromium } from '../test/helpers/browser.ts';
import { createDownstream } from '../test/helpers/breaker-watch.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createSource } from '../test/helpers/deps.ts';
import { metricsUrlOf, spawnTs, spawnWorker, type Spawned } from '../test/helpers/process.ts';
import { startPrometheus } from '../test/helpers/prometheus.ts';
import { expandVariables } from '../test/helpers/promql.ts';
import { startTestServices } from '../test/helpers/services.ts';

const DASHBOARD = path.join(PROJECT_ROOT, 'ops', 'grafana', 'durable-fetch.json');
const PICTURE = path.join(PROJECT_ROOT, 'docs', 'images', 'dashboard.png');
const SCRAPE_SECONDS = 2;
/**
 * `$__rate_interval` for a recording of minutes: Grafana would take max(step + scrape, 4 ×
 * scrape), 8 s here, whose rates jump between 0 and a burst; 30 s reads like a longer recording.
 */
const BUILTINS = { __rate_interval: '30s', __interval: '10s', __range: '10m' };
const STEP_SECONDS = 5;

const say = (line: string) => console.log(`[dashboard-picture] ${line}`);

interface Target {
  expr: string;
  legendFormat?: string;
}
interface Panel {
  type: string;
  id: number;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Target[];
  fieldConfig?: {
    defaults?: {
      unit?: string;
      custom?: { stacking?: { mode?: string } };
      thresholds?: { steps: { value: number | null; color: string }[] };
      mappings?: { options: Record<string, { text: string; color: string }> }[];
    };
  };
}
interface Series {
  legend: string;
  points: [number, number][];
}

interface Recording {
  start: number;
  end: number;
  prometheusUrl: string;
  /** Stops every process and service the recording started. */
  stop: () => Promise<void>;
}

/** Runs the traffic for `minutes`, leaving Prometheus up to be queried until `stop`. */
async function recordTraffic(minutes: number): Promise<Recording> {
  const stops: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const fn of stops.splice(0).reverse())
      await fn().catch((e: unknown) => say(`cleanup: ${String(e)}`));
  };
  try {
    const services = await startTestServices(say);
    stops.push(() => services.stop());
    Object.assign(process.env, services.env);
    const db = await useTestDatabase();
    stops.push(() => db.drop());
    const partner = await startPartner({ port: 0, recordCount: () => 150 });
    stops.push(() => partner.close());
    const connection = await Connection.connect({ address: services.temporalAddress });
    stops.push(() => connection.close());
    const client = new Client({ connection });
    const breaker = { failureRate: 0.5, minCalls: 4, windowMs: 20_000, openMs: 15_000, trialCalls: 1 };
    for (const id of ['acme', 'globex', 'initech', 'umbrella']) {
      await createDownstream(db.prisma, { id, breaker, retryBudget: { windowMs: 20_000 } });
      await createSource(db.prisma, `pic-${id}`, partner.url, { downstream: id, pageSize: 50 });
    }
    partner.faults.add({ sourceId: 'pic-acme', kind: 'delay', delayMs: 400, times: 1_000_000 });
    const taskQueue = `picture-${Date.now()}`;
    const env = {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: services.temporalAddress,
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
      DURABLE_FETCH_METRICS_SAMPLE_MS: String(SCRAPE_SECONDS * 1000),
      DURABLE_FETCH_WEBHOOK_URL: `${partner.url}/events`,
      PARTNER_PAGE_LIMIT: '50',
      // Errors only: the drawing needs no log, and the injected faults make the SDK warn a lot.
      LOG_LEVEL: 'error',
    };
    let worker: Spawned = spawnWorker(env);
    stops.push(() => worker.stop('SIGKILL', 5_000));
    const publisher = spawnTs(['bin/durable-fetch.js', 'publisher'], env);
    stops.push(() => publisher.stop('SIGKILL', 5_000));
    const publisherUrl = await metricsUrlOf(publisher);
    const prometheus = await startPrometheus({
      rulesText: await readFile(path.join(PROJECT_ROOT, 'ops', 'alerts.yml'), 'utf8'),
      metricsUrls: [await metricsUrlOf(worker), publisherUrl],
      intervalSeconds: SCRAPE_SECONDS,
      log: say,
    });
    stops.push(() => prometheus.stop());
    await worker.waitFor(/worker polling task queue/, 60_000);

    const ctx = { temporal: client, prisma: db.prisma, taskQueue };
    const start = Date.now();
    const end = start + minutes * 60_000;
    const outage = [start + minutes * 0.45 * 60_000, start + minutes * 0.6 * 60_000];
    let day = 0;
    let down = false;
    say(`recording ${minutes} min of traffic on ${taskQueue}`);
    while (Date.now() < end) {
      day++;
      const date = new Date(Date.UTC(2025, 0, day)).toISOString().slice(0, 10);
      // globex's partner is down for about half a minute of every two (its breaker opens, its
      // trials fail, then one succeeds and closes it); initech rejects a run's input now and then,
      // umbrella rate-limits now and then. A fault is added only when none of its source waits,
      // so faults do not pile up while calls are refused or the worker is gone.
      const waiting = (source: string) => partner.faults.list().filter((f) => f.sourceId === source);
      const globexDown = day % 30 < 8;
      if (globexDown && waiting('pic-globex').length === 0)
        partner.faults.add({ sourceId: 'pic-globex', kind: 'status', status: 503, times: 1_000_000 });
      if (!globexDown) for (const f of waiting('pic-globex')) partner.faults.remove(f.id);
      if (day % 5 === 0 && waiting('pic-initech').length === 0)
        partner.faults.add({ sourceId: 'pic-initech', kind: 'status', status: 422 });
      if (day % 4 === 0 && waiting('pic-umbrella').length === 0)
        partner.faults.add({ sourceId: 'pic-umbrella', kind: 'status', status: 429, times: 2 });
      for (const id of ['acme', 'globex', 'initech', 'umbrella']) {
        void startFetch(ctx, { sourceId: `pic-${id}`, date, requestedBy: 'test' }).catch((e: unknown) =>
          say(`start failed: ${String(e)}`),
        );
      }
      const now = Date.now();
      if (!down && now > outage[0]! && now < outage[1]!) {
        say('worker killed: the backlog grows');
        await worker.stop('SIGKILL', 5_000);
        down = true;
      } else if (down && now >= outage[1]!) {
        worker = spawnWorker(env);
        await prometheus.setTargets([await metricsUrlOf(worker), publisherUrl]);
        await worker.waitFor(/worker polling task queue/, 60_000);
        say('worker back');
        down = false;
      }
      await sleep(4_000);
    }
    if (worker.child.exitCode !== null || worker.child.signalCode !== null)
      throw new Error(`the worker died during the recording:\n${worker.output().slice(-3000)}`);
    return { start, end: Date.now(), prometheusUrl: prometheus.url, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function queryRange(prometheusUrl: string, expr: string, start: number, end: number) {
  const params = new URLSearchParams({
    query: expr,
    start: String(start / 1000),
    end: String(end / 1000),
    step: String(STEP_SECONDS),
  });
  const res = await fetch(`${prometheusUrl}/api/v1/query_range?${params.toString()}`);
  const body = (await res.json()) as {
    status: string;
    error?: string;
    data: { result: { metric: Record<string, string>; values: [number, string][] }[] };
  };
  if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
  return body.data.result;
}

/** Grafana's `{{label}}` legend, filled from a series' labels. */
const legendOf = (format: string | undefined, metric: Record<string, string>) =>
  (format ?? '').replace(/\{\{\s*(\w+)\s*\}\}/g, (_, l: string) => metric[l] ?? '');

function format(value: number, unit: string | undefined): string {
  const n = (v: number, d = 2) => (Math.abs(v) >= 100 ? v.toFixed(0) : Number(v.toFixed(d)).toString());
  switch (unit) {
    case 's':
      return value >= 120 ? `${n(value / 60, 1)} min` : `${n(value)} s`;
    case 'percentunit':
      return `${n(value * 100, 1)}%`;
    case 'opm':
      return `${n(value)}/min`;
    case 'reqps':
      return `${n(value, 3)}/s`;
    default:
      return n(value);
  }
}

const PALETTE = [
  '#73bf69',
  '#f2cc0c',
  '#8ab8ff',
  '#ff780a',
  '#f2495c',
  '#5794f2',
  '#b877d9',
  '#37872d',
  '#fade2a',
];
const COLORS: Record<string, string> = { green: '#73bf69', yellow: '#f2cc0c', red: '#f2495c' };
const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

function thresholdColor(panel: Panel, value: number): string {
  let color = 'green';
  for (const step of panel.fieldConfig?.defaults?.thresholds?.steps ?? [])
    if (step.value === null || value >= step.value) color = step.color;
  return COLORS[color] ?? color;
}

/** Series summed in order, as Grafana draws a panel whose stacking mode is `normal`. */
function stacked(series: Series[]): Series[] {
  const sums = new Map<number, number>();
  return series.map((s) => ({
    legend: s.legend,
    points: s.points.map(([t, v]) => {
      const sum = (sums.get(t) ?? 0) + (Number.isFinite(v) ? v : 0);
      sums.set(t, sum);
      return [t, sum] as [number, number];
    }),
  }));
}

function timeseriesSvg(panel: Panel, drawn: Series[], start: number, end: number, w: number, h: number) {
  const unit = panel.fieldConfig?.defaults?.unit;
  const series = panel.fieldConfig?.defaults?.custom?.stacking?.mode === 'normal' ? stacked(drawn) : drawn;
  const pad = { l: 64, r: 10, t: 8, b: 20 };
  const values = series.flatMap((s) => s.points.map((p) => p[1])).filter(Number.isFinite);
  const red = panel.fieldConfig?.defaults?.thresholds?.steps.find((s) => s.color === 'red')?.value ?? null;
  let max = Math.max(0, ...values);
  if (red !== null && max > red * 0.5) max = Math.max(max, red);
  max = max === 0 ? 1 : max * 1.1;
  const x = (t: number) => pad.l + ((t - start / 1000) / ((end - start) / 1000)) * (w - pad.l - pad.r);
  const y = (v: number) => h - pad.b - (v / max) * (h - pad.t - pad.b);
  const parts: string[] = [];
  for (let i = 0; i <= 3; i++) {
    const v = (max / 3) * i;
    parts.push(
      `<line x1="${pad.l}" x2="${w - pad.r}" y1="${y(v)}" y2="${y(v)}" stroke="#2c3235"/>`,
      `<text x="${pad.l - 6}" y="${y(v) + 4}" text-anchor="end">${esc(format(v, unit))}</text>`,
    );
  }
  for (let i = 0; i <= 4; i++) {
    const t = start + ((end - start) / 4) * i;
    const label = new Date(t).toISOString().slice(11, end - start < 15 * 60_000 ? 19 : 16);
    const anchor = i === 0 ? 'start' : i === 4 ? 'end' : 'middle';
    parts.push(`<text x="${x(t / 1000)}" y="${h - 4}" text-anchor="${anchor}">${label}</text>`);
  }
  if (red !== null && red <= max)
    parts.push(
      `<line x1="${pad.l}" x2="${w - pad.r}" y1="${y(red)}" y2="${y(red)}" stroke="#f2495c" stroke-dasharray="6 4"/>`,
    );
  series.forEach((s, i) => {
    // A missing sample (no scrape: the worker was gone) breaks the line, as Grafana leaves a gap.
    const points = s.points.filter((p) => Number.isFinite(p[1]));
    const d = points
      .map((p, j) => {
        const gap = j === 0 || p[0] - points[j - 1]![0] > STEP_SECONDS * 1.5;
        return `${gap ? 'M' : 'L'}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`;
      })
      .join(' ');
    parts.push(`<path d="${d}" fill="none" stroke="${PALETTE[i % PALETTE.length]}" stroke-width="1.6"/>`);
  });
  return `<svg width="${w}" height="${h}">${parts.join('')}</svg>`;
}

function statHtml(panel: Panel, series: Series[]): string {
  const unit = panel.fieldConfig?.defaults?.unit;
  const mapping = panel.fieldConfig?.defaults?.mappings?.[0]?.options;
  if (series.length === 0) return '<div class="nodata">No data</div>';
  return series
    .map((s) => {
      const last = s.points.at(-1)?.[1] ?? NaN;
      const mapped = mapping?.[String(last)];
      const text = mapped ? mapped.text : format(last, unit);
      const color = mapped ? (COLORS[mapped.color] ?? mapped.color) : thresholdColor(panel, last);
      return `<div class="stat" style="background:${color}"><div class="v">${esc(text)}</div><div class="l">${esc(s.legend)}</div></div>`;
    })
    .join('');
}

async function render(prometheusUrl: string, start: number, end: number): Promise<string> {
  const model = JSON.parse(await readFile(DASHBOARD, 'utf8')) as {
    title: string;
    panels: Panel[];
    templating: { list: { type: string; name: string }[] };
  };
  const vars = model.templating.list.filter((v) => v.type === 'query').map((v) => v.name);
  const COL = 1600 / 24;
  const ROW = 34;
  const boxes: string[] = [];
  let bottom = 0;
  for (const panel of model.panels) {
    const { x, y, w, h } = panel.gridPos;
    const [left, top, width, height] = [x * COL, y * ROW, w * COL - 8, h * ROW - 8];
    bottom = Math.max(bottom, top + height);
    if (panel.type === 'row') {
      boxes.push(
        `<div class="row" style="left:${left}px;top:${top}px;width:${width}px">${esc(panel.title)}</div>`,
      );
      continue;
    }
    const series: Series[] = [];
    for (const t of panel.targets ?? []) {
      const expr = expandVariables(t.expr, vars, BUILTINS);
      for (const r of await queryRange(prometheusUrl, expr, start, end)) {
        series.push({
          legend: legendOf(t.legendFormat, r.metric),
          points: r.values.map(([ts, v]) => [ts, Number(v)]),
        });
      }
    }
    if (series.length === 0) say(`no data: ${panel.title}`);
    const body =
      panel.type === 'stat'
        ? statHtml(panel, series)
        : series.length === 0
          ? '<div class="nodata">No data</div>'
          : timeseriesSvg(panel, series, start, end, width - 16, height - 62) +
            `<div class="legend">${series
              .map(
                (s, i) =>
                  `<span><i style="background:${PALETTE[i % PALETTE.length]}"></i>${esc(s.legend)}</span>`,
              )
              .join('')}</div>`;
    boxes.push(
      `<div class="panel" style="left:${left}px;top:${top}px;width:${width}px;height:${height}px"><div class="t">${esc(panel.title)}</div>${body}</div>`,
    );
  }
  const when = `${new Date(start).toISOString().slice(0, 16)}–${new Date(end).toISOString().slice(11, 16)} UTC`;
  return `<!doctype html><html><head><meta charset="utf-8"><style>
body{margin:0;background:#111217;color:#ccccdc;font:12px/1.3 system-ui,sans-serif;width:1610px}
header{padding:10px 12px;border-bottom:1px solid #2c3235}
header b{font-size:16px;color:#fff} header small{display:block;color:#9fa7b3;margin-top:3px}
main{position:relative;margin:8px}
.row{position:absolute;font-size:14px;font-weight:600;color:#fff;padding-top:8px}
.panel{position:absolute;background:#181b1f;border:1px solid #2c3235;border-radius:2px;padding:6px 8px;box-sizing:border-box;overflow:hidden}
.t{font-weight:600;color:#fff;margin-bottom:4px}
svg text{fill:#9fa7b3;font-size:10px}
.legend{display:flex;flex-wrap:wrap;gap:2px 10px;font-size:10.5px;max-height:34px;overflow:hidden}
.legend i{display:inline-block;width:12px;height:3px;margin-right:4px;vertical-align:middle}
.stat{display:inline-block;margin:2px 4px 0 0;padding:6px 10px;border-radius:2px;color:#111;min-width:90px}
.stat .v{font-size:26px;font-weight:600} .stat .l{font-size:11px}
.nodata{color:#6e7580;text-align:center;margin-top:40px}
</style></head><body><header><b>${esc(model.title)}</b> — our own drawing of ops/grafana/durable-fetch.json, not Grafana
<small>Each panel's PromQL, as the committed JSON has it, evaluated by a real Prometheus 2.42 (query_range, step ${STEP_SECONDS} s, $__rate_interval = ${BUILTINS.__rate_interval}, every variable = All) over ${when} of real traffic: a durable-fetch worker and publisher, the demo partner with injected faults, the worker killed for a while mid-way. Drawn by scripts/dashboard-picture.ts in headless Chromium.</small></header>
<main style="height:${bottom + 10}px">${boxes.join('')}</main></body></html>`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { minutes: { type: 'string', default: '8' } } });
  const minutes = Number(values.minutes);
  if (!(minutes >= 1 && minutes <= 60)) throw new Error(`--minutes takes 1..60, not ${values.minutes}`);
  const recorded = await recordTraffic(minutes);
  try {
    // One more scrape of the end state before drawing.
    await sleep(SCRAPE_SECONDS * 2_000);
    const html = await render(recorded.prometheusUrl, recorded.start, recorded.end);
    const htmlFile = path.join(PROJECT_ROOT, '.build', 'dashboard-picture.html');
    await mkdir(path.dirname(htmlFile), { recursive: true });
    await writeFile(htmlFile, html);
    await mkdir(path.dirname(PICTURE), { recursive: true });
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1610, height: 900 } });
      await page.setContent(html);
      await page.screenshot({ path: PICTURE, fullPage: true });
    } finally {
      await browser.close();
    }
    say(`wrote ${path.relative(PROJECT_ROOT, PICTURE)} (page: ${path.relative(PROJECT_ROOT, htmlFile)})`);
  } finally {
    await recorded.stop();
  }
}

await main();
