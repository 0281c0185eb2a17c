/**
 * The processes of durable-fetch for an application that installs the package
 * (`durable-fetch/worker`): a worker that runs the application's own jobs beside the built-in
 * ones, and the outbox publisher. Each runs until SIGINT/SIGTERM, as `durable-fetch worker` and
 * `durable-fetch publisher` do, configured by the same environment (docs/configuration.md).
 *
 *   import { runWorker } from 'durable-fetch/worker';
 *   import { shipmentsJob } from './jobs/shipments.js';
 *   await runWorker({ jobs: [shipmentsJob] });
 */
import type { AnyJob } from '../activities/job-api/index.ts';
import { addJobs } from '../jobs/registry.ts';
import { type Config, loadConfig } from '../runtime/config.ts';

export type { Config } from '../runtime/config.ts';
export { loadConfig } from '../runtime/config.ts';

export interface ProcessOptions {
  /** The application's jobs, registered beside the built-in ones (a type taken twice throws). */
  jobs?: readonly AnyJob[];
  /** Default: read from the environment (`loadConfig()`). */
  config?: Config;
}

/** Runs a worker (workflows and activities of every registered job) until stopped. */
export async function runWorker(options: ProcessOptions = {}): Promise<never> {
  if (options.jobs) addJobs(options.jobs);
  const { runWorker: run } = await import('./run-worker.ts');
  return run(options.config ?? loadConfig());
}

/** Runs the outbox publisher until stopped; `jobs` as for {@link runWorker} (the sweeps check sources by job). */
export async function runPublisher(options: ProcessOptions = {}): Promise<never> {
  if (options.jobs) addJobs(options.jobs);
  const { runPublisher: run } = await import('./outbox/run-publisher.ts');
  return run(options.config ?? loadConfig());
}
