/**
 * The storePage transaction against the same statements through plain `pg`: the real storePage
 * activity (built by createActivities with the project's deps, on Prisma and its pg adapter)
 * and bench/store-baseline.ts, which sends the activity's SQL in one transaction on the same data,
 * interleaved at concurrency 1 and 8, pages of 100 records. Both sides prepare each statement once
 * per connection, as a worker's client does, so that their ratio is the ORM's own cost; a third
 * side, the activity on a client that sends its statements unnamed, shows what preparing them
 * saves. Figures: tx/s, client CPU per transaction (process.cpuUsage), latency percentiles,
 * statements per store (counted on the pools' connections). A fourth side, the activity on a client
 * whose engine statements go through the Prisma client too (a plain PrismaPg adapter, no
 * connection lent: db/transaction.ts), shows what sending them through the driver saves. Prints
 * its figures; never fails on them.
 *
 *   npx tsx bench/store.ts [--quick]
 */
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createActivities } from '../activities/index.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { testDeps } from '../test/helpers/deps.ts';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../prisma/generated/client.ts';
import { poolConfig, prismaOn } from '../db/client.ts';
import { poolSize, WORKER_BACKGROUND } from '../worker/pool-size.ts';
import { statementNamer } from '../db/statement-names.ts';
import type { BenchOptions, BenchRow, BenchSection } from './report.ts';
import { standalone } from './standalone.ts';
import { baselineStorePage, countingPool, type CountingPool } from './store-baseline.ts';
import { createLaneSources, prepareLanes, RECORDS_PER_PAGE } from './store-setup.ts';
import type { StorePageInput } from '../contract/types.ts';

const CONCURRENCY = [1, 8] as const;
const LEASE_TTL_MS = 60_000;
const RETENTION_MS = 86_400_000;

type Side = 'ours' | 'baseline' | 'unnamed' | 'prismaOnly';
const SIDES: readonly Side[] = ['ours', 'baseline', 'unnamed', 'prismaOnly'];
interface Phase {
  txPerSecond: number;
  cpuMsPerTx: number;
  statementsPerTx: number;
  latenciesMs: number[];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return 0;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return 0;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number;
}

const round = (x: number, digits = 2) => Number(x.toFixed(digits));

/** Stores every lane's pages, lanes side by side, each lane's pages one after another. */
async function runPhase(
  lanes: StorePageInput[][],
  store: (input: StorePageInput) => Promise<unknown>,
  counted: CountingPool,
): Promise<Phase> {
  const latenciesMs: number[] = [];
  const statements0 = counted.statements();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    lanes.map(async (inputs) => {
      for (const input of inputs) {
        const t = performance.now();
        await store(input);
        latenciesMs.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const n = latenciesMs.length;
  return {
    txPerSecond: n / seconds,
    cpuMsPerTx: (cpu.user + cpu.system) / 1000 / n,
    statementsPerTx: (counted.statements() - statements0) / n,
    latenciesMs,
  };
}

export async function benchStore(opts: BenchOptions): Promise<BenchSection> {
  const reps = opts.quick ? 3 : 7;
  const pagesAt = (c: number) => (opts.quick ? (c === 1 ? 15 : 5) : c === 1 ? 40 : 12);
  const db = await useTestDatabase();
  // Both sides on pools as a worker of 8 activity slots opens them (bounded sessions).
  const config = poolConfig(db.url, {
    max: poolSize({ activitySlots: 8, background: WORKER_BACKGROUND }),
    bounded: true,
  });
  const oursPool = countingPool(config);
  const basePool = countingPool(config);
  const unnamedPool = countingPool(config);
  const prismaOnlyPool = countingPool(config);
  const prisma = prismaOn(oursPool.pool);
  const unnamedPrisma = prismaOn(unnamedPool.pool, { preparedStatements: false });
  const prismaOnly = new PrismaClient({
    adapter: new PrismaPg(prismaOnlyPool.pool, { statementNameGenerator: statementNamer() }),
    errorFormat: 'minimal',
  });
  const settings = { leaseTtlMs: LEASE_TTL_MS, idempotencyRetentionMs: RETENTION_MS };
  const deps = testDeps(prisma, settings);
  const acts = createActivities(deps);
  const unnamedActs = createActivities(testDeps(unnamedPrisma, settings));
  const prismaOnlyActs = createActivities(testDeps(prismaOnly, settings));
  const baseOptions = {
    leaseTtlMs: LEASE_TTL_MS,
    retentionMs: RETENTION_MS,
    statementName: statementNamer(),
  };
  const sides: Record<Side, (input: StorePageInput) => Promise<unknown>> = {
    ours: (input) => acts.storePage(input),
    baseline: (input) => baselineStorePage(basePool.pool, deps.jobs, input, baseOptions),
    unnamed: (input) => unnamedActs.storePage(input),
    prismaOnly: (input) => prismaOnlyActs.storePage(input),
  };
  const counters: Record<Side, CountingPool> = {
    ours: oursPool,
    baseline: basePool,
    unnamed: unnamedPool,
    prismaOnly: prismaOnlyPool,
  };
  const details: Record<string, unknown> = {
    recordsPerPage: RECORDS_PER_PAGE,
    repetitions: reps,
    pagesPerLane: Object.fromEntries(CONCURRENCY.map((c) => [c, pagesAt(c)])),
    pool: '8 slots and the background passes, on every side',
    statements:
      'prepared once per connection on ours, the baseline and the fourth side; unnamed on the third',
    prismaOnly: 'the fourth side: the engine statements through the Prisma client too',
  };
  const rows: BenchRow[] = [];
  try {
    const sources = await createLaneSources(basePool.pool, Math.max(...CONCURRENCY));
    // Warm-up (JIT, connections, plans), and the SQL each side sends for one page.
    for (const side of SIDES) {
      const [lane] = await prepareLanes(acts, basePool.pool, sources.slice(0, 1), 3);
      const [first, ...rest] = lane ?? [];
      if (!first) continue;
      const recording = counters[side].record();
      await sides[side](first);
      details[`${side}Statements`] = recording.stop();
      await runPhase([rest], sides[side], counters[side]);
    }
    const phases: Record<string, Phase[]> = {};
    for (const c of CONCURRENCY) {
      for (let rep = 0; rep < reps; rep++) {
        // Each side in each place of the order in turn, so a warming or cooling machine favours none.
        const order = SIDES.map((_, i) => SIDES[(i + rep) % SIDES.length] as Side);
        for (const side of order) {
          const lanes = await prepareLanes(acts, basePool.pool, sources.slice(0, c), pagesAt(c));
          const phase = await runPhase(lanes, sides[side], counters[side]);
          (phases[`${side}@${c}`] ??= []).push(phase);
          opts.say(`store c=${c} rep ${rep + 1}/${reps} ${side}: ${phase.txPerSecond.toFixed(1)} tx/s`);
        }
      }
    }
    const summary = (side: Side, c: number) => {
      const ps = phases[`${side}@${c}`] ?? [];
      const lat = ps.flatMap((p) => p.latenciesMs);
      return {
        txPerSecond: median(ps.map((p) => p.txPerSecond)),
        txPerSecondByRep: ps.map((p) => round(p.txPerSecond, 1)),
        cpuMsPerTx: median(ps.map((p) => p.cpuMsPerTx)),
        statementsPerTx: median(ps.map((p) => p.statementsPerTx)),
        latencyMs: {
          p50: round(percentile(lat, 50)),
          p95: round(percentile(lat, 95)),
          p99: round(percentile(lat, 99)),
        },
      };
    };
    for (const c of CONCURRENCY) {
      const ours = summary('ours', c);
      const base = summary('baseline', c);
      const unnamed = summary('unnamed', c);
      const viaPrisma = summary('prismaOnly', c);
      // Each repetition's pair ran back to back: their ratio is the least disturbed by the load of
      // whatever else shares the machine.
      const pairs = ours.txPerSecondByRep.map((t, i) => t / (base.txPerSecondByRep[i] ?? t));
      details[`concurrency${c}`] = {
        ours,
        baseline: base,
        unnamed,
        prismaOnly: viaPrisma,
        pairedRatioByRep: pairs.map((r) => round(r)),
        pairedRatioMedian: round(median(pairs)),
      };
      rows.push({
        scenario: `storePage tx/s, concurrency ${c} (${RECORDS_PER_PAGE} records)`,
        ours: round(ours.txPerSecond, 1),
        baseline: round(base.txPerSecond, 1),
        unit: 'tx/s',
        ratio: round(ours.txPerSecond / base.txPerSecond),
        goal: '≥ 0.8',
      });
      rows.push({
        scenario: `storePage client CPU per tx, concurrency ${c}`,
        ours: round(ours.cpuMsPerTx),
        baseline: round(base.cpuMsPerTx),
        unit: 'ms',
        ratio: round(base.cpuMsPerTx / ours.cpuMsPerTx),
      });
      rows.push({
        scenario: `storePage tx/s, concurrency ${c}, statements prepared (baseline: sent unnamed)`,
        ours: round(ours.txPerSecond, 1),
        baseline: round(unnamed.txPerSecond, 1),
        unit: 'tx/s',
        ratio: round(ours.txPerSecond / unnamed.txPerSecond),
      });
      rows.push({
        scenario: `storePage tx/s, concurrency ${c}, engine statements through the driver (baseline: through the Prisma client)`,
        ours: round(ours.txPerSecond, 1),
        baseline: round(viaPrisma.txPerSecond, 1),
        unit: 'tx/s',
        ratio: round(ours.txPerSecond / viaPrisma.txPerSecond),
      });
    }
    return { name: 'store', rows, details };
  } finally {
    await prisma.$disconnect();
    await unnamedPrisma.$disconnect();
    await prismaOnly.$disconnect();
    await Promise.all([oursPool, basePool, unnamedPool, prismaOnlyPool].map((p) => p.pool.end()));
    await db.drop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchStore);
