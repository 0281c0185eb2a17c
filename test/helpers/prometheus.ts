/**
 * A real Prometheus server for the alert fault suite (test/faults/alerts-prometheus.test.ts):
 * Debian's `prometheus` (installed by scripts/promtool.ts when missing) on a free loopback port,
 * with a config, targets file and TSDB of the test's own in a temporary folder, and
 * ops/alerts.yml loaded with every duration Prometheus waits on divided by a scale.
 *
 * What the scale changes, and only that: each rule's `for:` and every range or subquery window in
 * its expression (`[10m:1m]` → `[30s:3s]` at scale 20). The expressions are otherwise the file's
 * own text, so a broken expression breaks the suite; thresholds (`> 120` seconds of age, `> 0.5`
 * of calls, `>= 10` calls) are not scaled: the metrics they compare are measured in real time.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { resolvePrometheus } from '../../scripts/promtool.ts';
import { PROJECT_ROOT } from '../../runtime/config.ts';
import { freePort } from '../../runtime/process-utils.ts';

export const RULES_FILE = path.join(PROJECT_ROOT, 'ops', 'alerts.yml');

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** Seconds of a Prometheus duration (`90s`, `10m`, `1h30m`); throws on anything else. */
export function durationSeconds(text: string): number {
  const parts = [...text.matchAll(/(\d+)(ms|s|m|h|d|w)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) {
    throw new Error(`not a Prometheus duration: '${text}'`);
  }
  return parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_SECONDS[p[2]!]!, 0);
}

/** `seconds / scale` as a Prometheus duration, in whole milliseconds (at least 1 s). */
function scaled(text: string, scale: number): string {
  const ms = Math.max(1_000, Math.round((durationSeconds(text) * 1_000) / scale));
  return ms % 1_000 === 0 ? `${ms / 1_000}s` : `${ms}ms`;
}

export interface ScaledRules {
  /** The rule file to load: ops/alerts.yml with `for:` and windows scaled. */
  text: string;
  /** Each alert's scaled `for`, in seconds. */
  forSeconds: Map<string, number>;
  /** Each alert's longest scaled window, in seconds (how long a past value can keep it true). */
  windowSeconds: Map<string, number>;
}

/**
 * ops/alerts.yml's text with every `for:` and every `[range]` / `[range:step]` of a rule divided
 * by `scale`; comments and everything else are kept as they are. Reads the file by indentation the
 * way test/alerts.test.ts does (no YAML library): an `- alert:` line opens a rule.
 */
export function scaleRules(source: string, scale: number): ScaledRules {
  const forSeconds = new Map<string, number>();
  const windowSeconds = new Map<string, number>();
  let alert: string | undefined;
  const lines = source.split('\n').map((line) => {
    if (line.trimStart().startsWith('#')) return line;
    const opened = /^\s*- alert:\s*(\S+)\s*$/.exec(line);
    if (opened) {
      alert = opened[1]!;
      windowSeconds.set(alert, 0);
      return line;
    }
    if (!alert) return line;
    const waits = /^(\s*for:\s*)(\S+)\s*$/.exec(line);
    if (waits) {
      const text = scaled(waits[2]!, scale);
      forSeconds.set(alert, durationSeconds(text));
      return `${waits[1]!}${text}`;
    }
    const name = alert;
    return line.replace(
      /\[(\d+(?:ms|[smhdw]))(?::(\d+(?:ms|[smhdw])))?\]/g,
      (_, range: string, step?: string) => {
        const range2 = scaled(range, scale);
        windowSeconds.set(name, Math.max(windowSeconds.get(name) ?? 0, durationSeconds(range2)));
        return step ? `[${range2}:${scaled(step, scale)}]` : `[${range2}]`;
      },
    );
  });
  return { text: lines.join('\n'), forSeconds, windowSeconds };
}

/** One alert as `/api/v1/alerts` lists it (pending or firing; inactive ones are not listed). */
export interface ActiveAlert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

export interface PrometheusServer {
  url: string;
  /** Seconds between scrapes and between rule evaluations. */
  intervalSeconds: number;
  /** Replaces the scraped `/metrics` URLs (file-based discovery: picked up within a second or so). */
  setTargets(metricsUrls: readonly string[]): Promise<void>;
  /** The alerts now pending or firing. */
  alerts(): Promise<ActiveAlert[]>;
  /** The alert rules Prometheus has loaded, by name, with their state (inactive, pending, firing). */
  rules(): Promise<Map<string, string>>;
  /** The scrape targets' state, as JSON text (for failure messages). */
  targets(): Promise<string>;
  /** A PromQL instant query's samples. */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** SIGTERM, SIGKILL after 5 s; removes its folder. Idempotent. */
  stop(): Promise<void>;
}

async function api<T>(url: string): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  const body = (await res.json()) as { status: string; data: T; error?: string };
  if (body.status !== 'success') throw new Error(`${url}: ${body.error ?? res.status}`);
  return body.data;
}

/**
 * Starts Prometheus on 127.0.0.1 (a free port) scraping `metricsUrls` every `intervalSeconds`,
 * evaluating `rulesText` as often, and resolves once it is ready with every rule loaded.
 * Side effects: a temporary folder and a child process, killed if this process exits first.
 * Throws when it cannot be installed, exits early, or is not ready within 60 s.
 */
export async function startPrometheus(options: {
  rulesText: string;
  metricsUrls: readonly string[];
  intervalSeconds: number;
  log?: (line: string) => void;
}): Promise<PrometheusServer> {
  const binary = await resolvePrometheus(options.log ? { log: options.log } : {});
  const dir = await mkdtemp(path.join(os.tmpdir(), 'df-prometheus-'));
  const port = await freePort();
  const every = `${options.intervalSeconds}s`;
  const targetsFile = path.join(dir, 'targets.json');
  const setTargets = async (urls: readonly string[]) => {
    // One group per URL: each keeps its own metrics path.
    const groups = urls.map((u) => {
      const parsed = new URL(u);
      return { targets: [parsed.host], labels: { __metrics_path__: parsed.pathname } };
    });
    // Written whole, then renamed: discovery never reads half a file.
    await writeFile(`${targetsFile}.tmp`, JSON.stringify(groups));
    await rename(`${targetsFile}.tmp`, targetsFile);
  };
  await setTargets(options.metricsUrls);
  await writeFile(path.join(dir, 'alerts.yml'), options.rulesText);
  await writeFile(
    path.join(dir, 'prometheus.yml'),
    [
      'global:',
      `  scrape_interval: ${every}`,
      `  scrape_timeout: ${every}`,
      `  evaluation_interval: ${every}`,
      'rule_files:',
      `  - ${path.join(dir, 'alerts.yml')}`,
      'scrape_configs:',
      '  - job_name: durable-fetch',
      '    file_sd_configs:',
      `      - files: ['${targetsFile}']`,
      '        refresh_interval: 1s',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(
    binary,
    [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-8_000);
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);
  const exited = once(child, 'exit');
  let stopping: Promise<void> | undefined;
  const url = `http://127.0.0.1:${port}`;
  const server: PrometheusServer = {
    url,
    intervalSeconds: options.intervalSeconds,
    setTargets,
    alerts: async () => (await api<{ alerts: ActiveAlert[] }>(`${url}/api/v1/alerts`)).alerts,
    async rules() {
      const data = await api<{ groups: { rules: { type: string; name: string; state?: string }[] }[] }>(
        `${url}/api/v1/rules?type=alert`,
      );
      return new Map(data.groups.flatMap((g) => g.rules.map((r) => [r.name, r.state ?? '?'] as const)));
    },
    targets: async () => JSON.stringify(await api<unknown>(`${url}/api/v1/targets`)),
    query: async (expr) =>
      (
        await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
          `${url}/api/v1/query?query=${encodeURIComponent(expr)}`,
        )
      ).result,
    stop: () =>
      (stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          await exited;
          clearTimeout(timer);
        }
        process.removeListener('exit', killOnExit);
        await rm(dir, { recursive: true, force: true });
      })()),
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await server.stop();
      throw new Error(`prometheus exited during startup:\n${stderr}`);
    }
    const ready = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1_000) })
      .then((r) => r.ok)
      .catch(() => false);
    if (ready && (await server.rules().catch(() => new Map())).size > 0) return server;
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`prometheus was not ready within 60 s:\n${stderr}`);
    }
    await sleep(200);
  }
}

/** ops/alerts.yml scaled by `scale` (see {@link scaleRules}). */
export async function readScaledRules(scale: number): Promise<ScaledRules> {
  return scaleRules(await readFile(RULES_FILE, 'utf8'), scale);
}
