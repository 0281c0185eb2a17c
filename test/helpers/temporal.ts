/**
 * Real Temporal for tests: the run's shared dev server (DF_TEST_TEMPORAL_ADDRESS, started by
 * test/run.ts), one workflow bundle per test file, a unique task queue per worker.
 *
 * Be very careful: workflow ids derive from business keys and every test file shares one
 * namespace, so two files using the same source id and date would join each other's runs. Prefix
 * source ids with the file's name (e.g. `e2e-alpha`, `cli-delta`).
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Client, Connection, ScheduleNotFoundError } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { ActivityDeps } from '../../activities/index.ts';
import { startDownstreamPollers } from '../../worker/downstream-pollers.ts';
import { buildWorker, WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from '../../worker/worker.ts';

let bundle: Promise<{ code: string }> | undefined;
let runtimeQuiet = false;

export function temporalAddress(): string {
  const address = process.env.DF_TEST_TEMPORAL_ADDRESS;
  if (!address) {
    throw new Error(
      'DF_TEST_TEMPORAL_ADDRESS is not set: run the tests with `npm test` (test/run.ts starts Temporal).',
    );
  }
  return address;
}

/** A client of the shared test server. Close its connection when done. */
export async function testClient(): Promise<Client> {
  const connection = await Connection.connect({ address: temporalAddress() });
  return new Client({ connection });
}

/**
 * Deletes the schedules of `queues` (ids `<queue>/...`) and the `ids` given: the dev server is
 * shared by the whole run, and a test's schedules outlive it otherwise. Listing lags: it may still
 * show a schedule deleted a moment ago (so one already gone is no failure) and not yet show one just
 * created (so ids the caller knows are deleted whether listed or not).
 */
export async function deleteTestSchedules(
  client: Client,
  queues: Iterable<string>,
  ids: Iterable<string> = [],
): Promise<void> {
  const prefixes = [...queues].map((q) => `${q}/`);
  const doomed = new Set(ids);
  for await (const s of client.schedule.list()) {
    if (prefixes.some((prefix) => s.scheduleId.startsWith(prefix))) doomed.add(s.scheduleId);
  }
  for (const id of doomed) {
    await client.schedule
      .getHandle(id)
      .delete()
      .catch((err: unknown) => {
        if (!(err instanceof ScheduleNotFoundError)) throw err;
      });
  }
}

export interface TestWorker {
  taskQueue: string;
  /** Runs `fn` while a real worker polls a fresh task queue; stops the worker afterwards. */
  run<T>(fn: () => Promise<T>): Promise<T>;
}

export interface TestWorkerOptions {
  /**
   * Also poll the task queue of every downstream in `deps.prisma` (read every second), as
   * `durable-fetch worker` does (R8, worker/downstream-pollers.ts).
   */
  downstreams?: boolean;
}

/**
 * A worker factory on a unique task queue with the given activity dependencies (their `taskQueue`
 * becomes the worker's).
 */
export async function testWorker(
  baseDeps: ActivityDeps,
  options: TestWorkerOptions = {},
): Promise<TestWorker> {
  if (!runtimeQuiet) {
    runtimeQuiet = true;
    // Warnings only; must happen before the first native connection of the process.
    Runtime.install({ logger: new DefaultLogger('WARN') });
  }
  // The run's bundle when test/run.ts built one (every test file shares it), else one per file.
  const prebuilt = process.env.DF_TEST_WORKFLOW_BUNDLE;
  if (prebuilt) bundle ??= Promise.resolve({ code: await readFile(prebuilt, 'utf8') });
  bundle ??= bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    logger: quietLogger,
  });
  const workflowBundle = await bundle;
  const taskQueue = `test-${randomUUID()}`;
  const deps = { ...baseDeps, taskQueue };
  return {
    taskQueue,
    async run(fn) {
      const connection = await NativeConnection.connect({ address: temporalAddress() });
      let client: Promise<Client> | undefined;
      try {
        const worker = await buildWorker({
          connection,
          namespace: 'default',
          taskQueue,
          deps,
          workflowBundle,
        });
        if (!options.downstreams) return await worker.runUntil(fn);
        const pollers = await startDownstreamPollers({
          connection,
          namespace: 'default',
          taskQueue,
          deps,
          temporal: () => (client ??= testClient()),
          log: deps.log,
          refreshMs: 1_000,
          onFailure: (err) => console.error('downstream poller failed:', err),
        });
        try {
          return await worker.runUntil(fn);
        } finally {
          await pollers.shutdown();
        }
      } finally {
        if (client) await (await client).connection.close();
        await connection.close();
      }
    },
  };
}

const noop = () => {};
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };
