/**
 * The job registry of this process: the built-in jobs of jobs/index.ts and the jobs an application
 * registers beside them — through the package's worker entry (`runWorker({ jobs })`), or for the
 * `durable-fetch` command through DURABLE_FETCH_JOBS, the modules that export them. Checked once
 * (two jobs of one type, a malformed name: a `UserFacingError` at start, before anything runs).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AnyJob } from '../activities/job-api/index.ts';
import { createJobRegistry, type JobRegistry } from '../activities/job-api/registry.ts';
import { UserFacingError } from '../runtime/errors.ts';
import { jobs as builtIn } from './index.ts';

let registry: JobRegistry | undefined;
let added: readonly AnyJob[] = [];

/** The registry of the built-in jobs and those added by {@link addJobs} (built on first use). */
export function defaultJobs(): JobRegistry {
  registry ??= createJobRegistry([...builtIn, ...added]);
  return registry;
}

/** The built-in jobs and `jobs` as one registry, leaving this process's registry alone. */
export function jobsWith(jobs: readonly AnyJob[]): JobRegistry {
  return createJobRegistry([...builtIn, ...jobs.filter((job) => !builtIn.includes(job))]);
}

/**
 * Registers an application's jobs beside the built-in ones, for everything this process does
 * afterwards (its worker, its source checks, its CLI commands). A job registered already (the
 * same definition) is not added again; another job of a type taken throws a `UserFacingError`.
 */
export function addJobs(jobs: readonly AnyJob[]): JobRegistry {
  const next = [...added, ...jobs.filter((job) => !added.includes(job) && !builtIn.includes(job))];
  const built = createJobRegistry([...builtIn, ...next]);
  added = next;
  registry = built;
  return built;
}

/**
 * Loads the modules DURABLE_FETCH_JOBS names (comma-separated paths, relative to `cwd`, of
 * JavaScript modules, or TypeScript where the runtime loads it) and registers the jobs each
 * exports as `jobs` (an array) or as its default export (an array or one job).
 * @throws UserFacingError (INVALID_JOBS_MODULE) for a module that cannot be loaded or exports no job.
 */
export async function loadJobModules(spec: string | undefined, cwd = process.cwd()): Promise<void> {
  const files = (spec ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean);
  for (const file of files) {
    const url = pathToFileURL(path.resolve(cwd, file)).href;
    let mod: { jobs?: unknown; default?: unknown };
    try {
      mod = (await import(url)) as typeof mod;
    } catch (err) {
      throw new UserFacingError(
        `DURABLE_FETCH_JOBS: cannot load ${file}: ${(err as Error).message}`,
        'INVALID_JOBS_MODULE',
      );
    }
    const exported = mod.jobs ?? mod.default;
    const list = Array.isArray(exported) ? exported : exported === undefined ? [] : [exported];
    if (list.length === 0 || !list.every(isJob)) {
      throw new UserFacingError(
        `DURABLE_FETCH_JOBS: ${file} exports no jobs (export \`jobs\`, an array of defineJob(...) results)`,
        'INVALID_JOBS_MODULE',
      );
    }
    addJobs(list as AnyJob[]);
  }
}

function isJob(value: unknown): boolean {
  return (
    typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string'
  );
}
