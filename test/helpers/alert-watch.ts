/**
 * Alert states as Prometheus's HTTP API reports them, polled and kept as a timeline: when each
 * alert was first seen pending, first seen firing, and when it left the list again after firing
 * (resolved). Times are seconds from a fault's start, as the suite's timeline tables show them.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PrometheusServer } from './prometheus.ts';

/** One alert's history within one scenario, in seconds from the fault's start. */
export interface AlertTimes {
  pending?: number;
  firing?: number;
  resolved?: number;
}

export interface AlertWatch {
  /** Per alert name, what was seen so far. */
  times: Map<string, AlertTimes>;
  /** Seconds from the fault's start to now. */
  elapsed(): number;
  /** Resolves once `check()` holds, polling with the watch; rejects after `timeoutMs` naming `what`. */
  until(check: () => boolean, what: string, timeoutMs: number): Promise<void>;
  /** Every alert ever seen firing. */
  fired(): string[];
  stop(): Promise<void>;
}

/**
 * Polls `/api/v1/alerts` every `everyMs` from now on; `startedAt` (ms since the epoch) is the
 * fault's start. A poll that fails is retried on the next tick (Prometheus is local: a failure is
 * rare, and the next poll sees the state that counts).
 */
export function watchAlerts(prometheus: PrometheusServer, startedAt: number, everyMs = 250): AlertWatch {
  const times = new Map<string, AlertTimes>();
  const elapsed = () => (Date.now() - startedAt) / 1000;
  let running = true;
  let lastError: unknown;
  const poll = async () => {
    while (running) {
      try {
        const active = await prometheus.alerts();
        const now = elapsed();
        const listed = new Set<string>();
        for (const alert of active) {
          const name = alert.labels.alertname ?? '?';
          listed.add(name);
          const seen = times.get(name) ?? {};
          if (seen.resolved !== undefined) continue; // fired and resolved: the first episode is the one shown
          seen.pending ??= now;
          if (alert.state === 'firing') seen.firing ??= now;
          times.set(name, seen);
        }
        for (const [name, seen] of times) {
          if (seen.firing !== undefined && seen.resolved === undefined && !listed.has(name))
            seen.resolved = now;
        }
      } catch (error) {
        lastError = error;
      }
      await sleep(everyMs);
    }
  };
  const polling = poll();
  return {
    times,
    elapsed,
    async until(check, what, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!check()) {
        if (Date.now() > deadline) {
          const seen = JSON.stringify(Object.fromEntries(times));
          throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}; alerts seen: ${seen}`, {
            cause: lastError,
          });
        }
        await sleep(everyMs);
      }
    },
    fired: () => [...times].filter(([, t]) => t.firing !== undefined).map(([name]) => name),
    async stop() {
      running = false;
      await polling;
    },
  };
}

/** One row of the timeline table. */
export interface TimelineRow {
  scenario: string;
  alert: string;
  times: AlertTimes;
  /** Seconds from the fault's start to its end (recovery). */
  recovery: number;
}

const cell = (s: number | undefined) => (s === undefined ? '—' : s.toFixed(1));

/** The rows as a markdown table (fault start is 0 in every row). */
export function timelineTable(rows: readonly TimelineRow[]): string {
  return [
    '| scenario | alert | fault start | pending | firing | recovery | resolved |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${r.alert} | 0 | ${cell(r.times.pending)} | ${cell(r.times.firing)} | ` +
        `${cell(r.recovery)} | ${cell(r.times.resolved)} |`,
    ),
  ].join('\n');
}

/** Writes `header` and the table of `rows` to `file` (its folder made when missing). */
export async function writeTimeline(
  file: string,
  header: string,
  rows: readonly TimelineRow[],
): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${header}\n\n${timelineTable(rows)}\n`);
}
