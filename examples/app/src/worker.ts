/**
 * The application's worker: the engine's worker with the application's jobs registered beside
 * the built-in ones. Configured by the engine's environment (DATABASE_URL, TEMPORAL_ADDRESS,
 * DURABLE_FETCH_TASK_QUEUE, …); stops gracefully on SIGINT/SIGTERM.
 */
import { runWorker } from 'durable-fetch/worker';
import { jobs } from './jobs/index.ts';

await runWorker({ jobs });
