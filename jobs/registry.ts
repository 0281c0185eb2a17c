/**
 * The job registry of this deployment: the jobs listed in jobs/index.ts, checked once (two jobs of
 * one type, a malformed name: a `UserFacingError` at start, before anything runs).
 */
import { createJobRegistry, type JobRegistry } from '../activities/job-api/registry.ts';
import { jobs } from './index.ts';

let registry: JobRegistry | undefined;

/** The registry of jobs/index.ts (built on first use). */
export function defaultJobs(): JobRegistry {
  registry ??= createJobRegistry(jobs);
  return registry;
}
