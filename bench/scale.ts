/**
 * `npm run bench`, scale: 100, then 500, then 2,000 one-page runs queued at once on one worker
 * process (the order of a backlog that grows): throughput and the worker's peak memory must stay
 * flat — within 10 % and 20 % of the 100-run figures. The worker runs with its defaults, as a user
 * starts it; the settings that bound its memory are reported with the figures.
 */
import { pathToFileURL } from 'node:url';
import { startPartner } from '../partner/server.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createSource } from '../test/helpers/deps.ts';
import { testClient } from '../test/helpers/temporal.ts';
import { loadConfig } from '../worker/config.ts';
import { measurePhase, type PhaseResult, startRun, startWorkers } from './phases.ts';
import { type BenchOptions, type BenchSection, round } from './report.ts';
import { standalone } from './standalone.ts';

const RECORDS = 100;

/** The worker's settings that bound its memory, as the worker reads them (defaults unless overridden). */
function workerSettings(overrides: Record<string, string>) {
  const { activitySlots, cachedWorkflows } = loadConfig({ ...process.env, ...overrides }).worker;
  return { activitySlots, cachedWorkflows, overrides };
}

export async function benchScale(opts: BenchOptions): Promise<BenchSection> {
  const sizes = opts.quick ? [50, 200] : [100, 500, 2_000];
  const db = await useTestDatabase();
  const partner = await startPartner({ port: 0, recordCount: () => RECORDS, maxPageSize: RECORDS });
  const client = await testClient();
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k.startsWith('DURABLE_FETCH_WORKER_')),
  ) as Record<string, string>;
  const workers = await startWorkers(db.url, env);
  try {
    await createSource(db.prisma, 'scale', partner.url, { pageSize: RECORDS });
    const ctx = { temporal: client, prisma: db.prisma, taskQueue: workers.oursQueue };
    opts.say('scale: warming up…');
    await measurePhase(workers.ours, workers.serverPid, 20, () => startRun(ctx, 'scale', RECORDS));
    const phases: PhaseResult[] = [];
    for (const size of sizes) {
      opts.say(`scale: ${size} one-page runs queued at once…`);
      phases.push(
        await measurePhase(workers.ours, workers.serverPid, size, () => startRun(ctx, 'scale', RECORDS)),
      );
    }
    const first = phases[0] as PhaseResult;
    const last = phases.at(-1) as PhaseResult;
    const span = `${sizes[0]} → ${sizes.at(-1)} runs`;
    return {
      name: 'scale',
      rows: [
        {
          scenario: `runs/s, ${span} queued at once`,
          ours: last.runsPerSecond,
          baseline: first.runsPerSecond,
          unit: 'runs/s',
          ratio: round(last.runsPerSecond / first.runsPerSecond),
          goal: '≥ 0.9',
        },
        {
          scenario: `worker peak RSS, ${span} queued at once`,
          ours: last.workerPeakRssMiB,
          baseline: first.workerPeakRssMiB,
          unit: 'MiB',
          ratio: round(first.workerPeakRssMiB / last.workerPeakRssMiB),
          goal: '≥ 0.83 (within 20 %)',
        },
      ],
      details: { recordsPerRun: RECORDS, sizes, phases, workerSettings: workerSettings(env) },
    };
  } finally {
    await workers.stop();
    await client.connection.close();
    await partner.close();
    await db.drop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchScale);
