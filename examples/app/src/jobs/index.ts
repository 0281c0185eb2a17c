/**
 * The application's jobs: what its worker registers (src/worker.ts), and what the `durable-fetch`
 * command loads with DURABLE_FETCH_JOBS=src/jobs/index.ts to check sources of these jobs.
 */
import { shipmentsJob } from './shipments.ts';

export const jobs = [shipmentsJob];
