/**
 * The settings of a source an operator may set (`sources add`, `sources update`, a sources file),
 * each validated once, here: the same rule and the same message whichever input sets it, each
 * problem line naming the value in that input's words (a CLI option, or a path in the file). Also
 * the job config, checked by the job's own schema.
 */
import { z } from 'zod';
import { DOWNSTREAM_ID_RE } from '../../db/ledger/downstreams.ts';
import type { JobRegistry } from '../../activities/job-api/registry.ts';
import { parseJobConfig } from '../../activities/job-api/registry.ts';
import { SECRET_REF_RE } from '../../activities/create-deps.ts';
import { redactUrl } from '../../runtime/redact.ts';
import { PARTNER_PRESETS } from '../../contract/retry-presets.ts';
import { MAX_PAGE_SIZE } from '../start-fetch.ts';

/** Longest source name kept. */
export const MAX_NAME_LENGTH = 200;

/** Longest declared processing time of a partner's submissions: a day. */
export const MAX_SUBMIT_PROCESSING_MS = 86_400_000;

/** Bounds of a source's maximum run time (R9): a second to a week. */
export const RUN_TIME_MS = { min: 1_000, max: 7 * 86_400_000 } as const;

/** What `updateSource` may change (and `addSource` may set). `credentialsRef: null` clears it. */
export interface SourceChanges {
  name?: string;
  baseUrl?: string;
  pageSize?: number;
  retryPolicy?: string;
  credentialsRef?: string | null;
  timezone?: string;
  enabled?: boolean;
  submitSummary?: boolean;
  submitMaxProcessingMs?: number;
  maxRunTimeMs?: number;
  localFetch?: boolean;
  /** The job's config, checked by the job's schema (its defaults applied) before it is stored. */
  config?: unknown;
}

export type SourceField = keyof SourceChanges;

/** The CLI option of each field, for messages. */
export const FIELD_OPTIONS: Record<SourceField, string> = {
  name: '--name',
  baseUrl: '--base-url',
  pageSize: '--page-size',
  retryPolicy: '--retry-policy',
  credentialsRef: '--credentials-ref',
  timezone: '--timezone',
  enabled: '--enable/--disable',
  submitSummary: '--submit-summary',
  submitMaxProcessingMs: '--submit-max-processing',
  maxRunTimeMs: '--max-run-time',
  localFetch: '--local-fetch',
  config: '--config',
};

/** A setting of a new source outside {@link SourceChanges}, as a problem line names it. */
export type SettingName = SourceField | 'id' | 'job' | 'downstream' | 'schedule';

/**
 * How a problem line names the value it is about: the CLI names its options (`--page-size`), a
 * sources file the value's path (`sources[2].pageSize`).
 */
export interface Naming {
  /** The name of a setting. */
  field(name: SettingName): string;
  /** The line of a job config problem, given as `config[.<path>]: <message>` (parseJobConfig). */
  config(problem: string): string;
  /** The line of a schedule problem at `path` inside the schedule ('' for the whole schedule). */
  schedule(path: string, message: string): string;
}

const CLI_NAMES: Record<SettingName, string> = {
  ...FIELD_OPTIONS,
  id: '<id>',
  job: '--job',
  downstream: '--downstream',
  schedule: '--schedule',
};

/** The CLI's naming: options. */
export const CLI_NAMING: Naming = {
  field: (name) => CLI_NAMES[name],
  config: (problem) => `--config: ${problem}`,
  schedule: (path, message) => `--schedule: ${path ? `${path}: ` : ''}${message}`,
};

/** The naming of a file: paths below `at` (e.g. `sources[2]`). */
export function pathNaming(at: string): Naming {
  return {
    field: (name) => `${at}.${name}`,
    config: (problem) => `${at}.${problem}`,
    schedule: (path, message) => `${at}.schedule${path ? `.${path}` : ''}: ${message}`,
  };
}

/** True for an IANA timezone this runtime knows (the one check of a timezone's validity). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** True when the URL carries credentials (`user:password@`), which belong in a DF_SECRET_* variable. */
function hasUserInfo(value: string): boolean {
  try {
    const url = new URL(value);
    return url.username !== '' || url.password !== '';
  } catch {
    return false;
  }
}

const pageSizeError = `expected an integer 1..${MAX_PAGE_SIZE}`;
const processingError = `expected milliseconds 0..${MAX_SUBMIT_PROCESSING_MS}`;
const nameError = `must be 1..${MAX_NAME_LENGTH} characters`;
const runTimeError = `expected a duration of ${RUN_TIME_MS.min} ms to 7 days (e.g. 90s, 30m, 24h, 2d)`;

/** Each field's rule (also the JSON Schema of sources files: client/sources/file-schema.ts). */
export const FIELD_SCHEMAS = {
  name: z.string().trim().min(1, nameError).max(MAX_NAME_LENGTH, nameError),
  baseUrl: z
    .string()
    .trim()
    .refine(isHttpUrl, 'expected an http or https URL')
    // Userinfo, or a secret-looking query parameter (?token=, ?api_key=…): what redactUrl masks.
    .refine((v) => !hasUserInfo(v) && redactUrl(v) === v, {
      message:
        'must not carry credentials: put the secret in a DF_SECRET_* variable and set --credentials-ref',
      abort: true,
    }),
  pageSize: z
    .number({ error: pageSizeError })
    .int(pageSizeError)
    .min(1, pageSizeError)
    .max(MAX_PAGE_SIZE, pageSizeError),
  retryPolicy: z.enum(PARTNER_PRESETS, { error: `expected one of ${PARTNER_PRESETS.join(', ')}` }),
  credentialsRef: z
    .string()
    .regex(SECRET_REF_RE, 'expected the NAME of a DF_SECRET_* variable (A-Z, 0-9, _), not a secret')
    .nullable(),
  timezone: z.string().refine(isTimeZone, 'expected an IANA timezone such as Europe/Paris or UTC'),
  enabled: z.boolean(),
  submitSummary: z.boolean(),
  submitMaxProcessingMs: z
    .number({ error: processingError })
    .int(processingError)
    .min(0, processingError)
    .max(MAX_SUBMIT_PROCESSING_MS, processingError),
  maxRunTimeMs: z
    .number({ error: runTimeError })
    .int(runTimeError)
    .min(RUN_TIME_MS.min, runTimeError)
    .max(RUN_TIME_MS.max, runTimeError),
  localFetch: z.boolean(),
  // Its shape is the job's: checkJobConfig checks it once the job is known.
  config: z.unknown(),
} satisfies Record<SourceField, z.ZodType>;

/** The name of the downstream a source's actions go to. */
export const downstreamSchema = z
  .string()
  .regex(DOWNSTREAM_ID_RE, "expected a name of 1..63 a-z, 0-9, '-' and '_'");

const changesSchema = z.strictObject({
  name: FIELD_SCHEMAS.name.optional(),
  baseUrl: FIELD_SCHEMAS.baseUrl.optional(),
  pageSize: FIELD_SCHEMAS.pageSize.optional(),
  retryPolicy: FIELD_SCHEMAS.retryPolicy.optional(),
  credentialsRef: FIELD_SCHEMAS.credentialsRef.optional(),
  timezone: FIELD_SCHEMAS.timezone.optional(),
  enabled: FIELD_SCHEMAS.enabled.optional(),
  submitSummary: FIELD_SCHEMAS.submitSummary.optional(),
  submitMaxProcessingMs: FIELD_SCHEMAS.submitMaxProcessingMs.optional(),
  maxRunTimeMs: FIELD_SCHEMAS.maxRunTimeMs.optional(),
  localFetch: FIELD_SCHEMAS.localFetch.optional(),
  config: FIELD_SCHEMAS.config.optional(),
});

/**
 * Validates the given fields (`undefined` ones are left out): the valid values, or one
 * `<name>: <message>` line per invalid one, named by `naming` (default: the CLI's options).
 * `required` fields must be given. Pure.
 */
export function checkFields(
  changes: SourceChanges,
  required: readonly SourceField[] = [],
  naming: Naming = CLI_NAMING,
): { ok: true; fields: SourceChanges } | { ok: false; problems: string[] } {
  const given = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
  const missing = required.filter((f) => given[f] === undefined).map((f) => `${naming.field(f)}: required`);
  const parsed = changesSchema.safeParse(given);
  if (parsed.success && missing.length === 0) return { ok: true, fields: parsed.data };
  const invalid = parsed.success
    ? []
    : parsed.error.issues.map((i) => {
        const field = i.path[0];
        const name =
          typeof field === 'string' && field in FIELD_OPTIONS
            ? naming.field(field as SourceField)
            : String(field ?? '');
        return name ? `${name}: ${i.message}` : i.message;
      });
  return { ok: false, problems: [...missing, ...invalid] };
}

/**
 * The job of `jobType` and `raw` parsed with its config schema (defaults applied), or the
 * problems: an unknown job type (naming the known ones), or one config line per invalid value,
 * named by `naming`. Pure.
 */
export function checkJobConfig(
  jobs: JobRegistry,
  jobType: string,
  raw: unknown,
  naming: Naming = CLI_NAMING,
): { ok: true; config: unknown; hasDownstream: boolean } | { ok: false; problems: string[] } {
  const job = jobs.find(jobType);
  if (!job) {
    const known = jobs.types.join(', ') || 'none';
    return {
      ok: false,
      problems: [`${naming.field('job')}: unknown job type '${jobType}' (known: ${known})`],
    };
  }
  const parsed = parseJobConfig(job, raw);
  if (!parsed.ok) return { ok: false, problems: parsed.problems.map((p) => naming.config(p)) };
  return { ok: true, config: parsed.config, hasDownstream: job.downstream !== undefined };
}
