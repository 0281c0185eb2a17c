// bench/report.ts
export interface BenchOptions {
  /** About a minute for the whole `--quick` bench: fewer repetitions / smaller loads. */
  quick: boolean;
  say: (line: string) => void;
}
export interface BenchRow {
  scenario: string; // e.g. 'storePage tx/s, concurrency 8 (100 records)'
  ours: number; // durable-fetch's figure
  baseline: number | null; // the baseline's figure in the same unit, measured interleaved in the same run
  unit: string; // 'tx/s', 'ms', 'MiB', 's', 'runs/s', 'events/s'
  /** ours ÷ baseline when higher is better; baseline ÷ ours when lower is better (so ≥ 1 is always "as good or better"). */
  ratio: number | null;
  /** The target, e.g. '≥ 0.8'; omitted when none. */
  goal?: string;
}
export interface BenchSection {
  name: string; // 'store', 'outbox', 'cli', ...
  rows: BenchRow[];
  /** Everything else worth keeping in the JSON: p50/p95/p99, CPU per op, settings, repetitions. */
  details: Record<string, unknown>;
}
