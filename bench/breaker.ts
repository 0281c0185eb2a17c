/**
 * `npm run bench` (part): what R8's shared circuit breaker and retry budget add to each partner
 * call, against the local PostgreSQL — the admission every call makes (its one statement), the
 * failure record a failing call adds, and the whole guard around a call that does nothing, next to
 * the floor of any statement (`SELECT 1` through the same Prisma client). Sequential and 8 at once
 * on one downstream (its per-second count row is the one every call updates). Prints its figures;
 * the target (the guard under 1 ms at p50) is reported, never enforced.
 *
 *   BENCH_BREAKER_CALLS=2000 npm run bench
 */
import { performance } from 'node:perf_hooks';
import { throughBreaker } from '../activities/breaker-guard.ts';
import { admitCall, recordFailure } from '../db/breaker.ts';
import { downstreamSettingsSchema } from '../db/downstreams.ts';
import { createMetrics } from '../runtime/metrics.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { startTestServices } from '../test/helpers/services.ts';
import { createLogger } from '../runtime/logger.ts';

const CALLS = Number(process.env.BENCH_BREAKER_CALLS ?? 2_000);
const say = (line: string) => console.log(`[bench:breaker] ${line}`);

const services = await startTestServices(say);
Object.assign(process.env, services.env);
const db = await useTestDatabase();
const deps = { prisma: db.prisma, metrics: createMetrics(), log: createLogger('silent') };
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
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}

/** `calls` timings of `op`, `concurrency` at once. */
async function measure(concurrency: number, op: () => Promise<unknown>) {
  for (let i = 0; i < 100; i++) await op(); // warm-up: connections, plans
  const samples: number[] = [];
  const worker = async () => {
    while (samples.length < CALLS) {
      const t0 = performance.now();
      await op();
      samples.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return percentiles(samples);
}

const results: Record<string, { p50: number; p95: number; p99: number }> = {};
try {
  for (const concurrency of [1, 8]) {
    const s = settings(`bench-${concurrency}`);
    const r = `retry-${concurrency}`;
    results[`SELECT 1 (floor), ×${concurrency}`] = await measure(
      concurrency,
      () => db.prisma.$queryRaw`SELECT 1`,
    );
    results[`admission, first attempt, ×${concurrency}`] = await measure(concurrency, () =>
      admitCall(db.prisma, s, false),
    );
    results[`admission, retry (budget), ×${concurrency}`] = await measure(concurrency, () =>
      admitCall(db.prisma, settings(r), true),
    );
    results[`failure record, ×${concurrency}`] = await measure(concurrency, () =>
      recordFailure(db.prisma, s),
    );
    results[`guard around a no-op call, ×${concurrency}`] = await measure(concurrency, () =>
      throughBreaker(deps, { settings: s, retry: false, what: 'bench' }, () => Promise.resolve(0)),
    );
  }
  const width = Math.max(...Object.keys(results).map((k) => k.length));
  say(`${CALLS} calls each, ms:`);
  say(`${'what'.padEnd(width)}  ${'p50'.padStart(6)} ${'p95'.padStart(6)} ${'p99'.padStart(6)}`);
  for (const [what, p] of Object.entries(results)) {
    const f = (v: number) => v.toFixed(3).padStart(6);
    say(`${what.padEnd(width)}  ${f(p.p50)} ${f(p.p95)} ${f(p.p99)}`);
  }
  const guard = results['guard around a no-op call, ×1']?.p50 ?? NaN;
  say(
    `target: the guard under 1 ms at p50 (sequential): ${guard.toFixed(3)} ms — ${guard < 1 ? 'met' : 'NOT met'}`,
  );
  console.log(JSON.stringify({ bench: 'breaker', calls: CALLS, results }));
} finally {
  await db.drop();
  await services.stop();
}
