/**
 * The real processes the capacity and retention sections measure: a `durable-fetch worker` and a
 * `durable-fetch publisher`, each started as a user starts it (only its environment set), on a
 * bench database and the run's dev server, stopped with SIGTERM.
 */
import { randomUUID } from 'node:crypto';
import { spawnTs, type Spawned } from '../test/helpers/process.ts';
import { temporalAddress } from '../test/helpers/temporal.ts';
import { pidListeningOn } from './proc-stats.ts';

export interface ServiceProcess {
  process: Spawned;
  pid: number;
  stop(): Promise<void>;
}

export interface BenchWorker extends ServiceProcess {
  taskQueue: string;
  /** The Temporal dev server's pid (for its CPU). */
  serverPid: number;
}

/** Starts a worker on `databaseUrl` with its defaults but `env`; resolves once it polls. */
export async function startBenchWorker(
  databaseUrl: string,
  env: Record<string, string> = {},
): Promise<BenchWorker> {
  const address = temporalAddress();
  const taskQueue = `bench-capacity-${randomUUID()}`;
  const worker = spawnTs(['bin/durable-fetch.js', 'worker'], {
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: address,
    DURABLE_FETCH_TASK_QUEUE: taskQueue,
    PARTNER_PAGE_LIMIT: '500',
    LOG_LEVEL: 'warn',
    ...env,
  });
  const stop = async () => {
    await worker.stop('SIGTERM', 20_000);
  };
  try {
    await worker.waitFor(/worker polling task queue/, 120_000);
    const serverPid = await pidListeningOn(Number(address.split(':').pop()));
    if (!serverPid) throw new Error(`no process listens on ${address}`);
    return { process: worker, pid: worker.child.pid as number, taskQueue, serverPid, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Starts a publisher on `databaseUrl` delivering every topic to the webhook at `webhookUrl`, its
 * defaults but `env`; resolves once it runs.
 */
export async function startBenchPublisher(
  databaseUrl: string,
  webhookUrl: string,
  env: Record<string, string> = {},
): Promise<ServiceProcess> {
  const publisher = spawnTs(['bin/durable-fetch.js', 'publisher'], {
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress(),
    DURABLE_FETCH_OUTBOX_ROUTES: '*=webhook',
    DURABLE_FETCH_WEBHOOK_URL: webhookUrl,
    LOG_LEVEL: 'warn',
    ...env,
  });
  const stop = async () => {
    await publisher.stop('SIGTERM', 20_000);
  };
  try {
    await publisher.waitFor(/publisher running/, 120_000);
    return { process: publisher, pid: publisher.child.pid as number, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
