/**
 * The public job API (package export `durable-fetch/job`): `defineJob`, its types, and `failure`
 * for a job to throw one of the engine's error types (docs/jobs.md).
 */
export * from './define.ts';
export { failure } from '../errors.ts';
export type { ErrorType } from '../../workflows/error-types.ts';
