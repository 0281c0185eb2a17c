/**
 * The stack most end-to-end tests of runs stand on: the file's own cloned database, the demo
 * partner on a free port, a client of the shared Temporal dev server, and real
 * `durable-fetch worker` processes (one unless told) on a task queue of the file's own — started
 * before the file's tests, stopped after them.
 */
import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import type { Client } from '@temporalio/client';
import { startPartner, type PartnerServer } from '../../partner/server.ts';
import { useTestDatabase, type TestDatabase } from './database.ts';
import { waitFor } from './outbox.ts';
import { spawnWorker, type Spawned, within } from './process.ts';
import { temporalAddress, testClient } from './temporal.ts';

export interface WorkerStack {
  db: TestDatabase;
  partner: PartnerServer;
  client: Client;
  /** The first worker process (of `workers`). */
  worker: Spawned;
  /** Every worker process, all on the same task queue and database. */
  workers: Spawned[];
  taskQueue: string;
}

export interface WorkerStackOptions {
  /** Names the task queue (`test-<name>-<uuid>`). */
  name: string;
  /** Records the partner serves for every source and date, or per source and date. */
  records: number | ((sourceId: string, date: string) => number);
  /** The worker's environment on top of the stack's (database, Temporal, queue, 50-record pages). */
  env?: Record<string, string>;
  /** How many worker processes to run; default 1. */
  workers?: number;
  /** Runs before the workers start (rows they must find at start, e.g. downstreams). */
  beforeWorkers?: (stack: Pick<WorkerStack, 'db' | 'partner' | 'client' | 'taskQueue'>) => Promise<void>;
}

/**
 * Registers the `before` and `after` hooks of the stack and returns it; its fields are set once
 * `before` has run (use them inside tests and hooks only).
 */
export function useWorkerStack(options: WorkerStackOptions): WorkerStack {
  const stack = { taskQueue: `test-${options.name}-${randomUUID()}` } as WorkerStack;
  const { records } = options;
  before(async () => {
    [stack.db, stack.partner, stack.client] = await Promise.all([
      useTestDatabase(),
      startPartner({ port: 0, recordCount: typeof records === 'number' ? () => records : records }),
      testClient(),
    ]);
    await options.beforeWorkers?.(stack);
    stack.workers = Array.from({ length: options.workers ?? 1 }, () =>
      spawnWorker({
        DATABASE_URL: stack.db.url,
        TEMPORAL_ADDRESS: temporalAddress(),
        DURABLE_FETCH_TASK_QUEUE: stack.taskQueue,
        PARTNER_PAGE_LIMIT: '50',
        LOG_LEVEL: 'warn',
        ...options.env,
      }),
    );
    [stack.worker] = stack.workers as [Spawned];
    await Promise.all(stack.workers.map((w) => w.waitFor(/worker polling task queue/, 60_000)));
  });
  after(async () => {
    await Promise.all((stack.workers ?? []).map((w) => w.stop('SIGKILL', 5_000)));
    await stack.client?.connection.close();
    await stack.partner?.close();
    await stack.db?.drop();
  });
  return stack;
}

/** How a run's first worker was stopped in {@link takeOverHeldRun}. */
export interface FirstWorkerStop {
  exit: { code: number | null; signal: NodeJS.Signals | null };
  /** From the signal to the process's exit. */
  ms: number;
  output: string;
}

/**
 * A run on a task queue of its own, taken over by a second worker: the first `durable-fetch
 * worker` (1 s shutdown grace, partner calls that may wait `holdMs`) gets `signal` once `held()`
 * says the partner holds the call the test armed for it; once it has exited, a second worker on
 * the same queue takes the run up. Resolves with the run's result, how the first worker stopped,
 * and the run's workflow id; both workers are killed at the end whatever happened.
 */
export async function takeOverHeldRun<R>(
  stack: Pick<WorkerStack, 'db'>,
  options: {
    name: string;
    holdMs: number;
    signal: 'SIGKILL' | 'SIGTERM';
    /** Starts the run on `taskQueue` once the first worker polls. */
    start: (taskQueue: string) => Promise<{ workflowId: string; handle: { result(): Promise<R> } }>;
    /** True once the partner holds the call the first worker is to be stopped in. */
    held: () => boolean;
  },
): Promise<{ result: R; stopped: FirstWorkerStop; workflowId: string }> {
  const taskQueue = `test-${options.name}-${randomUUID()}`;
  const workers: Spawned[] = [];
  const worker = () => {
    const w = spawnWorker({
      DATABASE_URL: stack.db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: taskQueue,
      PARTNER_PAGE_LIMIT: '50',
      HTTP_RESPONSE_TIMEOUT_MS: String(options.holdMs),
      DURABLE_FETCH_SHUTDOWN_GRACE_MS: '1000',
      LOG_LEVEL: 'warn',
    });
    workers.push(w);
    return w;
  };
  try {
    const first = worker();
    await first.waitFor(/worker polling task queue/, 60_000);
    const started = await options.start(taskQueue);
    await waitFor(options.held, 'the partner holding the call', 60_000);
    const signalledAt = Date.now();
    first.child.kill(options.signal);
    const exit = await within(first.ended, 180_000, () => first.output());
    const ms = Date.now() - signalledAt;
    const second = worker();
    const result = await within(
      started.handle.result(),
      120_000,
      () => `${first.output()}\n${second.output()}`,
    );
    return { result, stopped: { exit, ms, output: first.output() }, workflowId: started.workflowId };
  } finally {
    await Promise.all(workers.map((w) => w.stop('SIGKILL', 5_000)));
  }
}
