/**
 * The built-in jobs: every process registers them, and an application's own jobs beside them
 * (`runWorker({ jobs })`, DURABLE_FETCH_JOBS; jobs/registry.ts, docs/jobs.md).
 */
import type { AnyJob } from '../activities/job-api/index.ts';
import { exchangeRatesJob } from './exchange-rates.ts';
import { fetchRecordsJob } from './fetch-records/index.ts';
import { httpJob } from './http/index.ts';

export const jobs: readonly AnyJob[] = [fetchRecordsJob, exchangeRatesJob, httpJob];
