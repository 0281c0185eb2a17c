/** What every section of `npm run bench` returns: rows for the printed table, details for the JSON. */
export interface BenchOptions {
  /** About a minute for the whole `--quick` bench: fewer repetitions / smaller loads. */
  quick: boolean;
  say: (line: string) => void;
}

export interface BenchRow {
  /** E.g. `storePage tx/s, concurrency 8 (100 records)`. */
  scenario: string;
  /** durable-fetch's figure. */
  ours: number;
  /** The baseline's figure in the same unit, measured interleaved in the same run. */
  baseline: number | null;
  /** `tx/s`, `ms`, `MiB`, `s`, `runs/s`, `events/s`. */
  unit: string;
  /** ours ÷ baseline when higher is better, baseline ÷ ours when lower is better: ≥ 1 is as good or better. */
  ratio: number | null;
  /** The target, e.g. `≥ 0.8`; omitted when none. */
  goal?: string;
}

export interface BenchSection {
  /** `store`, `outbox`, `cli`, … */
  name: string;
  rows: BenchRow[];
  /** Everything else worth keeping in the JSON: p50/p95/p99, CPU per op, settings, repetitions. */
  details: Record<string, unknown>;
}

/** The median of `xs` (0 for none). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return 0;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** The `p`-th percentile (0..100) of `xs`, nearest rank (0 for none). */
export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return 0;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number;
}

/** `x` rounded to `digits` decimals. */
export const round = (x: number, digits = 2): number => Number(x.toFixed(digits));
