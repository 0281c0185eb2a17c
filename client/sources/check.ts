/**
 * The one check of a new source's settings, whoever gives them (`sources add`, a sources file):
 * every problem that needs no database, one line each, in the words of the input (its naming).
 */
import type { JobRegistry } from '../../activities/job-api/registry.ts';
import { isSourceId } from '../../contract/business-key.ts';
import { desiredSchedule, type ScheduledSource, sourceScheduleSchema } from '../schedule-spec.ts';
import {
  checkFields,
  checkJobConfig,
  CLI_NAMING,
  downstreamSchema,
  isTimeZone,
  type Naming,
  type SourceChanges,
} from './fields.ts';

/** A new source. Unset settings take the column defaults (engine.prisma). */
export interface NewSource extends SourceChanges {
  id: string;
  /** The partner's http(s) base URL, without credentials. */
  baseUrl: string;
  /** A job type of the registry. */
  jobType: string;
  /** The source's schedule (client/schedule-spec.ts); none: it runs only when started. */
  schedule?: unknown;
  /** The name of the downstream the source's actions go to (default `default`). */
  downstream?: string;
}

export interface CheckContext {
  /** The jobs sources may run. */
  jobs: JobRegistry;
  /** The future-date policy (DURABLE_FETCH_MAX_FUTURE_DAYS): the largest schedule `dateOffsetDays`. */
  maxFutureDays: number;
}

/** A new source's values once checked: its fields as stored and its job's parsed config. */
export interface CheckedSource {
  problems: string[];
  /** The valid fields (all of them when there is no problem). */
  fields: SourceChanges;
  /** The job's config with its defaults applied; undefined when it is invalid. */
  config: unknown;
}

// desiredSchedule builds the schedule's id from a task queue; a check only wants its problem.
const CHECK_QUEUE = 'check';

/**
 * The problems of a source's schedule (its shape, the cron and the future-date policy), one line
 * each, named by `naming`: the one check of a schedule whoever sets it (`sources add`, `sources
 * update`, a sources file). Pure.
 */
export function scheduleProblems(
  maxFutureDays: number,
  // Its timezone as it will be; an invalid one (reported with the fields) checks it in UTC.
  source: Omit<ScheduledSource, 'timezone'> & { timezone?: string },
  naming: Naming = CLI_NAMING,
): string[] {
  const parsed = sourceScheduleSchema.safeParse(source.schedule);
  if (!parsed.success) return parsed.error.issues.map((i) => naming.schedule(i.path.join('.'), i.message));
  // The timezone's own problem is reported with the fields; the schedule is checked in UTC then.
  const zone = source.timezone;
  const timezone = typeof zone === 'string' && isTimeZone(zone) ? zone : 'UTC';
  const d = desiredSchedule({ ...source, timezone }, CHECK_QUEUE, maxFutureDays);
  if (!('problem' in d)) return [];
  return [naming.schedule('', d.problem.replace(/^source '[^']*': (schedule )?/, ''))];
}

/**
 * Every problem of `input` that needs no database (id format, base URL, credentials reference,
 * timezone, page size, retry preset, the job type and its config, `submitSummary` only for a job
 * with a downstream action, downstream name, schedule with the future-date policy), one line
 * each, named by `naming` (default: the CLI's options); and the checked values. Pure.
 */
export function checkNewSource(
  ctx: CheckContext,
  input: NewSource,
  naming: Naming = CLI_NAMING,
): CheckedSource {
  const problems: string[] = [];
  if (!isSourceId(input.id)) {
    problems.push(
      `${naming.field('id')}: invalid source id '${input.id}': use 1..63 of a-z, 0-9, '-' and '_'`,
    );
  }
  const { id: _id, schedule, downstream, jobType, config: rawConfig, ...fields } = input;
  const checked = checkFields(fields, ['baseUrl'], naming);
  if (!checked.ok) problems.push(...checked.problems);
  const job = checkJobConfig(ctx.jobs, jobType, rawConfig, naming);
  if (!job.ok) problems.push(...job.problems);
  else if (input.submitSummary === true && !job.hasDownstream) {
    problems.push(`${naming.field('submitSummary')}: job '${jobType}' has no downstream action to submit to`);
  }
  if (downstream !== undefined) {
    const parsed = downstreamSchema.safeParse(downstream);
    if (!parsed.success)
      problems.push(...parsed.error.issues.map((i) => `${naming.field('downstream')}: ${i.message}`));
  }
  if (schedule !== undefined && schedule !== null) {
    problems.push(...scheduleProblems(ctx.maxFutureDays, { ...input, schedule }, naming));
  }
  return { problems, fields: checked.ok ? checked.fields : {}, config: job.ok ? job.config : undefined };
}
