// Every workflow type the worker registers (bundled by Temporal's worker from this file).
// The run workflow under its type and, for runs started before the rename, under its old one.
export { fetchRunWorkflow, fetchRecordsWorkflow } from './fetch-records.ts';
export { scheduledFetchWorkflow } from './scheduled-fetch.ts';
export { compensateRunWorkflow } from './compensate-run.ts';
export { replayDeadLettersWorkflow } from './replay-dead-letters.ts';
