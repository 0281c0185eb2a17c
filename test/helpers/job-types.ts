/**
 * The job types this deployment registers (jobs/index.ts through jobs/registry.ts), for tests that
 * name them: a job added to jobs/index.ts keeps those tests true. Never an empty list: the
 * built-in jobs the engine ships must be among them, so a test that checks something per job
 * cannot pass by checking nothing.
 */
import assert from 'node:assert/strict';
import { defaultJobs } from '../../jobs/registry.ts';

/** The jobs the engine ships (jobs/): every deployment's registry has them. */
export const BUILT_IN_JOB_TYPES = ['exchange-rates', 'fetch-records', 'http'] as const;

/** The registered job types, sorted as the registry lists them (and as messages name them). */
export function registeredJobTypes(): readonly string[] {
  const types = defaultJobs().types;
  for (const type of BUILT_IN_JOB_TYPES) {
    assert.ok(
      types.includes(type),
      `the registry has the built-in job '${type}' (it has: ${types.join(', ')})`,
    );
  }
  return types;
}

/** `text` as a regular expression matching it literally. */
export function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
