/**
 * `npm run bench`, tracing: what exporting traces costs a worker (docs/tracing.md). Two real
 * `durable-fetch worker` processes on one dev server and database, each on its own task queue:
 * one with no OTEL_* setting (no exporter: OpenTelemetry not even loaded), one exporting every
 * span over OTLP/HTTP to a real receiver in this process. The same job (pages of 100 records, two
 * per run) runs on each in turn, the order rotating, so a warming or cooling machine favours
 * neither. Goal: the traced worker keeps at least 0.9 of the untraced one's throughput.
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { startPartner } from '../partner/server.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createSource } from '../test/helpers/deps.ts';
import { startOtlpReceiver } from '../test/helpers/otlp-receiver.ts';
import { spawnTs, type Spawned } from '../test/helpers/process.ts';
import { temporalAddress, testClient } from '../test/helpers/temporal.ts';
import { measurePhase, nodeFlagsFromEnv, type PhaseResult, settleAll, startRun } from './phases.ts';
import { pidListeningOn } from './proc-stats.ts';
import { type BenchOptions, type BenchRow, type BenchSection, median, round } from './report.ts';
import { standalone } from './standalone.ts';

const RECORDS = 200;
const PAGE_SIZE = 100;

export async function benchTracing(opts: BenchOptions): Promise<BenchSection> {
  const runs = opts.quick ? 60 : 200;
  const repeats = opts.quick ? 1 : 3;
  const db = await useTestDatabase();
  const partner = await startPartner({ port: 0, recordCount: () => RECORDS, maxPageSize: PAGE_SIZE });
  const receiver = await startOtlpReceiver();
  const client = await testClient();
  const queues = { plain: `bench-untraced-${randomUUID()}`, traced: `bench-traced-${randomUUID()}` };
  const spawn = (queue: string, env: Record<string, string>) =>
    spawnTs([...nodeFlagsFromEnv(), 'bin/durable-fetch.js', 'worker'], {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: queue,
      PARTNER_PAGE_LIMIT: '500',
      LOG_LEVEL: 'warn',
      ...env,
    });
  const workers: Record<'plain' | 'traced', Spawned> = {
    plain: spawn(queues.plain, {}),
    traced: spawn(queues.traced, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }),
  };
  try {
    await Promise.all(Object.values(workers).map((w) => w.waitFor(/worker polling task queue/, 120_000)));
    const serverPid = await pidListeningOn(Number(temporalAddress().split(':').pop()));
    if (!serverPid) throw new Error(`no process listens on ${temporalAddress()}`);
    await createSource(db.prisma, 'trc', partner.url, { pageSize: PAGE_SIZE });
    const ctx = (who: 'plain' | 'traced') => ({
      temporal: client,
      prisma: db.prisma,
      taskQueue: queues[who],
    });
    opts.say('tracing: warming up both workers…');
    for (const who of ['plain', 'traced'] as const) {
      await settleAll(
        await Promise.all(Array.from({ length: 10 }, () => startRun(ctx(who), 'trc', RECORDS))),
      );
    }
    const phases: Record<string, PhaseResult[]> = {};
    let spans = 0;
    for (let rep = 0; rep < repeats; rep++) {
      for (const who of rep % 2 ? (['traced', 'plain'] as const) : (['plain', 'traced'] as const)) {
        opts.say(
          `tracing: ${runs} runs at once, ${who === 'traced' ? 'exporting traces' : 'untraced'} (${rep + 1}/${repeats})…`,
        );
        const before = receiver.spans().length;
        (phases[who] ??= []).push(
          await measurePhase(workers[who], serverPid, runs, () => startRun(ctx(who), 'trc', RECORDS)),
        );
        if (who === 'traced') spans += receiver.spans().length - before;
      }
    }
    const of = (who: string, field: keyof PhaseResult) => median((phases[who] ?? []).map((p) => p[field]));
    const rate = { ours: of('traced', 'runsPerSecond'), baseline: of('plain', 'runsPerSecond') };
    const cpu = { ours: of('traced', 'workerCpuMsPerRun'), baseline: of('plain', 'workerCpuMsPerRun') };
    const rows: BenchRow[] = [
      {
        scenario: 'runs/s, exporting traces (OTLP/HTTP) vs untraced',
        ...rate,
        unit: 'runs/s',
        ratio: round(rate.ours / rate.baseline),
        goal: '≥ 0.9',
      },
      {
        scenario: 'worker CPU per run, exporting traces vs untraced',
        ...cpu,
        unit: 'ms',
        ratio: round(cpu.baseline / cpu.ours),
      },
      {
        scenario: 'spans exported per run',
        ours: round(spans / (runs * repeats), 1),
        baseline: null,
        unit: 'spans',
        ratio: null,
      },
    ];
    return {
      name: 'tracing',
      rows,
      details: { runsPerPhase: runs, repeats, recordsPerRun: RECORDS, pageSize: PAGE_SIZE, phases },
    };
  } finally {
    await Promise.all(Object.values(workers).map((w) => w.stop('SIGTERM', 20_000)));
    await client.connection.close();
    await receiver.close();
    await partner.close();
    await db.drop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchTracing);
