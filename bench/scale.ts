/**
 * `npm run bench`, scale: 100, then 500, then 2,000 one-page runs queued at once on one worker
 * process (the order of a backlog that grows): throughput and the worker's peak memory must stay
 * flat — within 10 % and 20 % of the 100-run figures. The worker runs with its defaults, as a user
 * starts it, then again with its heap capped ({@link SCALE_HEAP_CAP_MIB}); the settings that bound
 * its memory are reported with the figures.
 */
import { pathToFileURL } from 'node:url';
import { startPartner } from '../partner/server.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createSource } from '../test/helpers/deps.ts';
import { testClient } from '../test/helpers/temporal.ts';
import { loadConfig } from '../runtime/config.ts';
import { measurePhase, nodeFlagsFromEnv, type PhaseResult, startRun, startWorkers } from './phases.ts';
import { type BenchOptions, type BenchRow, type BenchSection, round } from './report.ts';
import { standalone } from './standalone.ts';

const RECORDS = 100;

/** The worker's settings that bound its memory, as the worker reads them (defaults unless overridden). */
function workerSettings(overrides: Record<string, string>) {
  const { activitySlots, cachedWorkflows } = loadConfig({ ...process.env, ...overrides }).worker;
  return { activitySlots, cachedWorkflows, overrides };
}

/**
 * The worker's heap as the section runs it a second time: V8's default limit is a few GiB (4 GiB
 * on the CI machine), and V8 collects its old generation late when it may grow that far, so the
 * peak RSS of a worker follows the backlog's allocation rate rather than what it keeps. Capped, it
 * collects earlier: docs/configuration.md says how to size the cap.
 */
export const SCALE_HEAP_CAP_MIB = 512;

/** What every sequence of the section runs against. */
interface Stack {
  dbUrl: string;
  client: Awaited<ReturnType<typeof testClient>>;
  prisma: Parameters<typeof startRun>[0]['prisma'];
  env: Record<string, string>;
}

/** One sequence of backlogs on a fresh pair of workers started with `nodeFlags`. */
async function sequence(
  opts: BenchOptions,
  stack: Stack,
  nodeFlags: string[],
  sizes: number[],
): Promise<PhaseResult[]> {
  const workers = await startWorkers(stack.dbUrl, stack.env, nodeFlags);
  try {
    const ctx = { temporal: stack.client, prisma: stack.prisma, taskQueue: workers.oursQueue };
    const run = () => startRun(ctx, 'scale', RECORDS);
    opts.say('scale: warming up…');
    await measurePhase(workers.ours, workers.serverPid, 20, run);
    const phases: PhaseResult[] = [];
    for (const size of sizes) {
      opts.say(`scale: ${size} one-page runs queued at once (node ${nodeFlags.join(' ') || 'defaults'})…`);
      phases.push(await measurePhase(workers.ours, workers.serverPid, size, run));
    }
    return phases;
  } finally {
    await workers.stop();
  }
}

/** The section's two rows for one sequence: throughput and peak RSS, last against first. */
function rowsOf(phases: PhaseResult[], sizes: number[], heap: string): BenchRow[] {
  const first = phases[0] as PhaseResult;
  const last = phases.at(-1) as PhaseResult;
  const span = `${sizes[0]} → ${sizes.at(-1)} runs`;
  return [
    {
      scenario: `runs/s, ${span} queued at once, ${heap}`,
      ours: last.runsPerSecond,
      baseline: first.runsPerSecond,
      unit: 'runs/s',
      ratio: round(last.runsPerSecond / first.runsPerSecond),
      goal: '≥ 0.9',
    },
    {
      scenario: `worker peak RSS, ${span} queued at once, ${heap}`,
      ours: last.workerPeakRssMiB,
      baseline: first.workerPeakRssMiB,
      unit: 'MiB',
      ratio: round(first.workerPeakRssMiB / last.workerPeakRssMiB),
      goal: '≥ 0.83 (within 20 %)',
    },
  ];
}

export async function benchScale(opts: BenchOptions): Promise<BenchSection> {
  const sizes = opts.quick ? [50, 200] : [100, 500, 2_000];
  const db = await useTestDatabase();
  const partner = await startPartner({ port: 0, recordCount: () => RECORDS, maxPageSize: RECORDS });
  const client = await testClient();
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k.startsWith('DURABLE_FETCH_WORKER_')),
  ) as Record<string, string>;
  const capFlag = `--max-old-space-size=${SCALE_HEAP_CAP_MIB}`;
  const stack = { dbUrl: db.url, client, prisma: db.prisma, env };
  const cappedFlags = [...nodeFlagsFromEnv(), capFlag];
  try {
    await createSource(db.prisma, 'scale', partner.url, { pageSize: RECORDS });
    const phases = await sequence(opts, stack, nodeFlagsFromEnv(), sizes);
    const capped = await sequence(opts, stack, cappedFlags, sizes);
    return {
      name: 'scale',
      rows: [...rowsOf(phases, sizes, "Node's default heap"), ...rowsOf(capped, sizes, capFlag)],
      details: {
        recordsPerRun: RECORDS,
        sizes,
        phases,
        cappedHeap: { nodeFlags: cappedFlags, phases: capped },
        workerSettings: workerSettings(env),
      },
    };
  } finally {
    await client.connection.close();
    await partner.close();
    await db.drop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchScale);
