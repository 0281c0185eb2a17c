/**
 * The jobs this deployment runs: `durable-fetch worker`, `npm start` and the CLI register exactly
 * these. Add yours here (docs/jobs.md).
 */
import type { AnyJob } from '../activities/job-api/index.ts';
import { exchangeRatesJob } from './exchange-rates.ts';
import { fetchRecordsJob } from './fetch-records/index.ts';
import { httpJob } from './http/index.ts';

export const jobs: readonly AnyJob[] = [fetchRecordsJob, exchangeRatesJob, httpJob];
