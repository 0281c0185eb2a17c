/**
 * The jobs a process knows, by type. Built once at start from the job list (jobs/index.ts); a
 * mistake in the list (two jobs of one type, a bad name) stops the process with one clear line.
 */
import { UserFacingError } from '../../runtime/errors.ts';
import { isActionName, isJobType } from '../../contract/business-key.ts';
import { failure } from '../errors.ts';
import type { AnyJob } from './define.ts';

export interface JobRegistry {
  /** The registered types, sorted. */
  readonly types: readonly string[];
  /** The job of `type`, or undefined. */
  find(type: string): AnyJob | undefined;
  /**
   * The job of a source's runs.
   * @throws ApplicationFailure InvalidInput `UNKNOWN_JOB_TYPE` when no job of that type is
   *   registered in this process (a source added for a job this worker does not run).
   */
  get(type: string): AnyJob;
}

/**
 * Registers `jobs`.
 * @throws UserFacingError `JOB_REGISTRY` naming the first problem: a missing or malformed type or action
 *   name, a job registered twice under one type, a job without `fetchPage`/`storePage`/`recordId`.
 */
export function createJobRegistry(jobs: readonly AnyJob[]): JobRegistry {
  const byType = new Map<string, AnyJob>();
  for (const job of jobs) {
    const problem = problemOf(job, byType);
    if (problem) throw new UserFacingError(`job list: ${problem}`, 'JOB_REGISTRY');
    byType.set(job.type, job);
  }
  const types = [...byType.keys()].sort();
  return {
    types,
    find: (type) => byType.get(type),
    get(type) {
      const job = byType.get(type);
      if (job) return job;
      throw failure(
        'InvalidInput',
        'UNKNOWN_JOB_TYPE',
        `no job of type '${type}' is registered in this worker (it runs: ${types.join(', ') || 'none'})`,
      );
    },
  };
}

function problemOf(job: AnyJob, known: ReadonlyMap<string, AnyJob>): string | undefined {
  const type = (job as { type?: unknown }).type;
  // Checked as a string first: String(undefined) is 'undefined', a well-formed type.
  if (typeof type !== 'string') return `a job has no type (its type is ${typeof type})`;
  if (!isJobType(type)) return `job type '${type}' must be lower case letters, digits and '-' (at most 41)`;
  if (known.has(type)) return `two jobs are registered under type '${type}'`;
  for (const hook of ['recordId', 'fetchPage', 'storePage'] as const) {
    if (typeof job[hook] !== 'function') return `job '${type}' has no ${hook} function`;
  }
  const action = job.downstream;
  if (action) {
    if (!isActionName(action.name)) {
      return `job '${type}': downstream action name '${action.name}' must be lower case letters, digits, '-' and '_'`;
    }
    for (const hook of ['submit', 'lookup', 'void'] as const) {
      if (typeof action[hook] !== 'function')
        return `job '${type}': downstream action has no ${hook} function`;
    }
  }
  return undefined;
}

/**
 * Checks a source's job config against the job's schema: the parsed config, or one line per
 * problem (`config.<path>: <message>`). A job without a schema takes only an empty object.
 */
export function parseJobConfig(
  job: AnyJob,
  raw: unknown,
): { ok: true; config: unknown } | { ok: false; problems: string[] } {
  if (!job.config) {
    const empty =
      typeof raw === 'object' && raw !== null && !Array.isArray(raw) && Object.keys(raw).length === 0;
    return empty || raw === undefined
      ? { ok: true, config: {} }
      : { ok: false, problems: [`config: job '${job.type}' takes no config`] };
  }
  const parsed = job.config.safeParse(raw ?? {});
  if (parsed.success) return { ok: true, config: parsed.data };
  return {
    ok: false,
    problems: parsed.error.issues.map(
      (i) => `config${i.path.map((p) => `.${String(p)}`).join('')}: ${i.message}`,
    ),
  };
}
