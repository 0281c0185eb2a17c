/** Human output of the CLI: aligned tables and short durations. */

/** Renders rows as an aligned text table with a header line; `columns` picks and orders keys. */
export function table(rows: readonly Record<string, string>[], columns: readonly string[]): string {
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [
    line(columns.map((c) => c.toUpperCase())),
    ...rows.map((r) => line(columns.map((c) => r[c] ?? ''))),
  ].join('\n');
}

/** `1.2s`, `3m 04s`, `2h 05m`. */
export function duration(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** Web UI link of a workflow execution. */
export function workflowUrl(uiBase: string, namespace: string, workflowId: string, runId?: string): string {
  const base = `${uiBase.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
  return runId ? `${base}/${encodeURIComponent(runId)}/history` : base;
}

/**
 * One line for a failed run: the innermost cause's type and message (Temporal wraps an activity's
 * ApplicationFailure in ActivityFailure in WorkflowFailedError). Messages are already redacted.
 */
export function failureSummary(err: unknown): string {
  let e: unknown = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  if (!(e instanceof Error)) return String(e);
  const type = (e as { type?: unknown }).type;
  return typeof type === 'string' && type ? `${type}: ${e.message}` : e.message;
}

/**
 * An incremental run's window in words: `since 2026-01-01T00:00:00.000Z until … (head: moves the
 * watermark)`.
 */
export function windowText(w: { since: string; until: string | null; head: boolean }): string {
  const bounds = `since ${w.since}${w.until === null ? '' : ` until ${w.until}`}`;
  return `${bounds} (${w.head ? 'head: moves the watermark' : 'leaves the watermark: an older date, or moved by an operator since'})`;
}
