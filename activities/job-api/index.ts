/**
 * The public job API (package export `durable-fetch/job`): `defineJob`, its types, and `failure`
 * for a job to throw one of the engine's error types, `credentialsMissing` for a secret reference
 * of its config that resolves to nothing (docs/jobs.md).
 */
export * from './define.ts';
export { failure } from '../errors.ts';
export { credentialsMissing } from '../sources.ts';
export type { ErrorType } from '../../workflows/error-types.ts';
