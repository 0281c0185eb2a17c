/**
 * What the workflow benches share: a real `durable-fetch worker` process and the bare-workflow
 * worker beside it on one dev server, and a phase that starts many runs at once and charges the
 * CPU each process spent to the runs.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { startFetch } from '../client/start-fetch.ts';
import type { PrismaClient } from '../db/client.ts';
import { spawnTs, type Spawned } from '../test/helpers/process.ts';
import { temporalAddress } from '../test/helpers/temporal.ts';
import { cpuMs, cpuMsOfCommand, machineCpuMs, peakRss, pidListeningOn } from './proc-stats.ts';

export interface PhaseResult {
  runs: number;
  seconds: number;
  runsPerSecond: number;
  /** CPU per run of the worker process, and of the Temporal dev server, in ms. */
  workerCpuMsPerRun: number;
  serverCpuMsPerRun: number;
  /**
   * CPU per run of PostgreSQL (all its processes), of the bench process (the client starting and
   * awaiting the runs, and the demo partner where the scenario uses it), and of the whole machine.
   */
  postgresCpuMsPerRun: number;
  benchCpuMsPerRun: number;
  machineCpuMsPerRun: number;
  workerPeakRssMiB: number;
}

export interface Workers {
  ours: Spawned;
  bare: Spawned;
  oursQueue: string;
  bareQueue: string;
  serverPid: number;
  stop(): Promise<void>;
}

/**
 * Starts both workers (settings from `env`, as a user would set them; `nodeFlags` for node itself,
 * e.g. a profiler) and finds the server's pid.
 */
/**
 * Node flags for both worker processes from `BENCH_NODE_FLAGS`, e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile them during a bench (NODE_OPTIONS refuses those).
 */
export function nodeFlagsFromEnv(): string[] {
  return (process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
}

export async function startWorkers(
  databaseUrl: string,
  env: Record<string, string> = {},
  nodeFlags: string[] = nodeFlagsFromEnv(),
): Promise<Workers> {
  const address = temporalAddress();
  const oursQueue = `bench-ours-${randomUUID()}`;
  const bareQueue = `bench-bare-${randomUUID()}`;
  const ours = spawnTs([...nodeFlags, 'bin/durable-fetch.js', 'worker'], {
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: address,
    DURABLE_FETCH_TASK_QUEUE: oursQueue,
    PARTNER_PAGE_LIMIT: '500',
    LOG_LEVEL: 'warn',
    ...env,
  });
  const bare = spawnTs([...nodeFlags, 'bench/bare-worker.ts'], {
    TEMPORAL_ADDRESS: address,
    BENCH_TASK_QUEUE: bareQueue,
    ...env,
  });
  const stop = async () => {
    await Promise.all([ours.stop('SIGTERM', 20_000), bare.stop('SIGTERM', 20_000)]);
  };
  try {
    await Promise.all([
      ours.waitFor(/worker polling task queue/, 120_000),
      bare.waitFor(/bare worker polling/, 120_000),
    ]);
    const serverPid = await pidListeningOn(Number(address.split(':').pop()));
    if (!serverPid) throw new Error(`no process listens on ${address}`);
    return { ours, bare, oursQueue, bareQueue, serverPid, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Starts `count` runs at once through `start` (each returns a promise of its end), waits for all,
 * and reports the throughput and the CPU and peak memory the worker and the server spent.
 */
export async function measurePhase(
  worker: Spawned,
  serverPid: number,
  count: number,
  start: (i: number) => Promise<Started>,
): Promise<PhaseResult> {
  const pid = worker.child.pid as number;
  const [w0, s0, p0, m0] = await Promise.all([
    cpuMs(pid),
    cpuMs(serverPid),
    cpuMsOfCommand('postgres'),
    machineCpuMs(),
  ]);
  const b0 = process.cpuUsage();
  const memory = peakRss([pid]);
  const t0 = performance.now();
  const started = await startAll(count, start);
  // Every end settled before any failure is reported: nothing is left running past the phase.
  const ends = await settleAll(started);
  const failed = ends.find((e) => e.status === 'rejected');
  if (failed) throw failed.reason instanceof Error ? failed.reason : new Error(JSON.stringify(failed.reason));
  const seconds = (performance.now() - t0) / 1000;
  const b1 = process.cpuUsage(b0);
  const [w1, s1, p1, m1] = await Promise.all([
    cpuMs(pid),
    cpuMs(serverPid),
    cpuMsOfCommand('postgres'),
    machineCpuMs(),
  ]);
  const [workerPeakRssMiB = 0] = memory.stop();
  const perRun = (ms: number) => Number((ms / count).toFixed(1));
  return {
    runs: count,
    seconds: Number(seconds.toFixed(2)),
    runsPerSecond: Number((count / seconds).toFixed(2)),
    workerCpuMsPerRun: perRun(w1 - w0),
    serverCpuMsPerRun: perRun(s1 - s0),
    postgresCpuMsPerRun: perRun(p1 - p0),
    benchCpuMsPerRun: perRun((b1.user + b1.system) / 1000),
    machineCpuMsPerRun: perRun(m1 - m0),
    workerPeakRssMiB,
  };
}

/** Starts `count` runs, at most 32 starts in flight (a user's app starts them as fast as it can). */
async function startAll(count: number, start: (i: number) => Promise<Started>): Promise<Started[]> {
  const started: Started[] = [];
  let next = 0;
  let failure: unknown;
  const starter = async () => {
    while (next < count && failure === undefined) {
      const i = next++;
      started[i] = await start(i).catch((err: unknown) => {
        failure ??= err;
        return { end: () => Promise.resolve() };
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(32, count) }, starter));
  // Settled first: nothing keeps using the client once the phase has failed.
  if (failure !== undefined) {
    await settleAll(started);
    throw failure instanceof Error ? failure : new Error(JSON.stringify(failure));
  }
  return started;
}

/** Waits for every run's end, at most 100 waits at once; settled results in order. */
export async function settleAll(started: Started[]): Promise<PromiseSettledResult<unknown>[]> {
  const results: PromiseSettledResult<unknown>[] = [];
  let next = 0;
  const waiter = async () => {
    while (next < started.length) {
      const i = next++;
      results[i] = await (started[i] as Started).end().then(
        (value) => ({ status: 'fulfilled', value }) as const,
        (reason: unknown) => ({ status: 'rejected', reason }) as const,
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(100, started.length) }, waiter));
  return results;
}

/**
 * Business dates that never repeat within one bench process: each run is a new business key. They
 * count forward from 1900-01-01, never reaching today (a date in the future is refused): a whole
 * `npm run bench` starts some 15,000 runs, and counting from 2000 reached the future at the
 * 9,837th (the capacity and retention sections then failed).
 */
let day = 0;
export function nextDate(): string {
  return new Date(Date.UTC(1900, 0, 1) + day++ * 86_400_000).toISOString().slice(0, 10);
}

/**
 * A run once started: `end()` waits for its end. A function, not a promise: each wait is a long
 * poll of the server, which limits how many a namespace serves at once.
 */
export interface Started {
  end: () => Promise<unknown>;
}

/** Starts one fetch run of `sourceId`; resolves once started, with a promise of a checked success. */
export async function startRun(
  ctx: { temporal: Client; prisma: PrismaClient; taskQueue: string },
  sourceId: string,
  records: number,
): Promise<Started> {
  const started = await startFetch(ctx, { sourceId, date: nextDate(), requestedBy: 'test' });
  const end = () =>
    started.handle.result().then((r) => {
      if (r.status !== 'succeeded' || r.records !== records) {
        throw new Error(`bench run ${started.workflowId} ended ${JSON.stringify(r)}`);
      }
    });
  return { end };
}

/** Starts one bare workflow of `steps` no-op activities; resolves once started. */
export async function startBare(client: Client, taskQueue: string, steps: number): Promise<Started> {
  const handle = await client.workflow.start('bareWorkflow', {
    workflowId: `bench-bare-${randomUUID()}`,
    taskQueue,
    args: [steps],
  });
  return { end: () => handle.result() };
}
