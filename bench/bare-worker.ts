/**
 * The bare workflow's worker process (bench/bare-workflows.ts): the same worker settings as
 * durable-fetch's (worker/worker.ts), no-op activities. Prints `bare worker polling` when ready;
 * stops on SIGTERM.
 *
 *   TEMPORAL_ADDRESS=127.0.0.1:7233 BENCH_TASK_QUEUE=q tsx bench/bare-worker.ts
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { workerTuning } from '../worker/worker.ts';

const connection = await NativeConnection.connect({
  address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
});
const worker = await Worker.create({
  connection,
  namespace: 'default',
  taskQueue: process.env.BENCH_TASK_QUEUE ?? 'bench-bare',
  workflowsPath: fileURLToPath(new URL('./bare-workflows.ts', import.meta.url)),
  activities: { noop: (step: number) => Promise.resolve(step) },
  maxConcurrentActivityTaskExecutions: Number(process.env.DURABLE_FETCH_WORKER_ACTIVITY_SLOTS ?? 20),
  ...workerTuning(),
});
process.once('SIGTERM', () => worker.shutdown());
console.log('bare worker polling');
await worker.run();
await connection.close();
