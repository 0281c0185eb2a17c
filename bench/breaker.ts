/**
 * `npm run bench` (part): what R8's shared circuit breaker and retry budget add to each partner
 * call, against the local PostgreSQL — the admission every call makes (its one statement), the
 * failure record a failing call adds, and the whole guard around a call that does nothing, next to
 * the floor of any statement (`SELECT 1` through the same Prisma client). Sequential and 8 at once
 * on one downstream (its per-second count row is the one every call updates). The target (the
 * guard under 1 ms at p50) is reported, never enforced.
 */
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { throughBreaker } from '../activities/retry/breaker-guard.ts';
import { admitCall, recordFailure } from '../db/retry/breaker.ts';
import { downstreamSettingsSchema } from '../db/ledger/downstreams.ts';
import { createMetrics } from '../runtime/metrics/metrics.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createLogger } from '../runtime/logger.ts';
import { type BenchOptions, type BenchSection, round } from './report.ts';
import { standalone } from './standalone.ts';

// Never opens, and a budget no retry meets: each call takes the common path to the end.
const settings = (id: string) =>
  downstreamSettingsSchema.parse({
    id,
    breaker: { minCalls: 100_000 },
    retryBudget: { ratio: 1, minRetries: 100_000 },
  });

function percentiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { p50: round(at(0.5), 3), p95: round(at(0.95), 3), p99: round(at(0.99), 3) };
}

/** `calls` timings of `op`, `concurrency` at once, after a warm-up (connections, plans). */
async function measure(calls: number, concurrency: number, op: () => Promise<unknown>) {
  for (let i = 0; i < 100; i++) await op();
  const samples: number[] = [];
  const worker = async () => {
    while (samples.length < calls) {
      const t0 = performance.now();
      await op();
      samples.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return percentiles(samples);
}

export async function benchBreaker(opts: BenchOptions): Promise<BenchSection> {
  const calls = opts.quick ? 300 : 2_000;
  const db = await useTestDatabase();
  const deps = { prisma: db.prisma, metrics: createMetrics(), log: createLogger('silent') };
  const results: Record<string, { p50: number; p95: number; p99: number }> = {};
  try {
    for (const concurrency of [1, 8]) {
      opts.say(`breaker: ${calls} calls of each kind, ${concurrency} at once…`);
      const s = settings(`bench-${concurrency}`);
      const r = `retry-${concurrency}`;
      const m = (op: () => Promise<unknown>) => measure(calls, concurrency, op);
      results[`SELECT 1 (floor), ×${concurrency}`] = await m(() => db.prisma.$queryRaw`SELECT 1`);
      results[`admission, first attempt, ×${concurrency}`] = await m(() => admitCall(db.prisma, s, false));
      results[`admission, retry (budget), ×${concurrency}`] = await m(() =>
        admitCall(db.prisma, settings(r), true),
      );
      results[`failure record, ×${concurrency}`] = await m(() => recordFailure(db.prisma, s));
      results[`guard around a no-op call, ×${concurrency}`] = await m(() =>
        throughBreaker(deps, { settings: s, retry: false, what: 'bench' }, () => Promise.resolve(0)),
      );
    }
  } finally {
    await db.drop();
  }
  const p50 = (what: string) => results[what]?.p50 ?? NaN;
  const guard = p50('guard around a no-op call, ×1');
  const floor = p50('SELECT 1 (floor), ×1');
  return {
    name: 'breaker',
    rows: [
      {
        scenario: 'breaker guard around a partner call, p50 (baseline: SELECT 1)',
        ours: guard,
        baseline: floor,
        unit: 'ms',
        ratio: round(floor / guard),
        goal: 'guard < 1 ms',
      },
    ],
    details: { calls, results },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchBreaker);
