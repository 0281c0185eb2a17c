// Every workflow type the worker registers (bundled by Temporal's worker from this file).
export { fetchRecordsWorkflow } from './fetch-records.ts';
export { scheduledFetchWorkflow } from './scheduled-fetch.ts';
export { compensateRunWorkflow } from './compensate-run.ts';
export { replayDeadLettersWorkflow } from './replay-dead-letters.ts';
