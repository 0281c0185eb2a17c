/**
 * The shape of a sources file (`sources apply -f`, `sources validate -f`), made of the settings'
 * own rules (fields.ts, schedule-spec.ts), and its JSON Schema for editors (`npm run
 * schema:sources` writes sources.schema.json), where `config` follows the source's `job`.
 */
import { z } from 'zod';
import type { JobRegistry } from '../../activities/job-api/registry.ts';
import { FETCH_RECORDS, SOURCE_ID_RE } from '../../contract/business-key.ts';
import { sourceScheduleSchema } from '../schedule-spec.ts';
import { downstreamSettingsSchema } from '../../db/ledger/downstreams.ts';
import { downstreamSchema, FIELD_SCHEMAS } from './fields.ts';

/** The job of a source that names none (the column default). */
export const DEFAULT_JOB = FETCH_RECORDS;

/**
 * What a setting a source of the file leaves out is: the column default (engine.prisma; a test
 * checks they agree). The name defaults to the id, the config to the job's defaults.
 */
export const SOURCE_DEFAULTS = {
  credentialsRef: null,
  timezone: 'UTC',
  pageSize: 1000,
  retryPolicy: 'partnerHttp',
  downstream: 'default',
  enabled: true,
  submitSummary: false,
  submitMaxProcessingMs: 60_000,
  maxRunTimeMs: 86_400_000,
  localFetch: true,
  schedule: null,
} as const;

const d = SOURCE_DEFAULTS;

/** One source of the file; `jobTypes` are the jobs it may name. */
function sourceSchema(jobTypes: readonly string[]) {
  const [first, ...rest] = jobTypes;
  const job = first === undefined ? z.string() : z.enum([first, ...rest]);
  return z.strictObject({
    id: z
      .string()
      .regex(SOURCE_ID_RE)
      .describe("The source's id: 1..63 of a-z, 0-9, '-' and '_' (never reused)."),
    job: job.default(DEFAULT_JOB).describe('The job that runs it; fixed once the source exists.'),
    name: FIELD_SCHEMAS.name.optional().describe('Display name (default: the id).'),
    baseUrl: FIELD_SCHEMAS.baseUrl.describe("The partner's http(s) base URL, without credentials."),
    credentialsRef: FIELD_SCHEMAS.credentialsRef
      .default(d.credentialsRef)
      .describe('Name of the DF_SECRET_* variable holding the bearer token (never the token).'),
    timezone: FIELD_SCHEMAS.timezone
      .default(d.timezone)
      .describe('IANA timezone of business dates and of the schedule.'),
    pageSize: FIELD_SCHEMAS.pageSize.default(d.pageSize).describe('Records per stored page.'),
    retryPolicy: FIELD_SCHEMAS.retryPolicy.default(d.retryPolicy).describe('Partner retry preset.'),
    downstream: downstreamSchema.default(d.downstream).describe('The downstream its actions go to.'),
    submitSummary: FIELD_SCHEMAS.submitSummary
      .default(d.submitSummary)
      .describe('Runs submit their summary downstream (jobs with a downstream action).'),
    submitMaxProcessingMs: FIELD_SCHEMAS.submitMaxProcessingMs
      .default(d.submitMaxProcessingMs)
      .describe('The longest (ms) the partner may take to apply a submission.'),
    maxRunTimeMs: FIELD_SCHEMAS.maxRunTimeMs
      .default(d.maxRunTimeMs)
      .describe(
        'The longest (ms) one run may take, pauses and retries included (R9); then DeadlineExceeded.',
      ),
    localFetch: FIELD_SCHEMAS.localFetch
      .default(d.localFetch)
      .describe(
        'Fetch partner pages as local activities: fewer round trips to Temporal, but no heartbeat, no fairness key or queue rate limit (R8); ignored when its downstream is isolated.',
      ),
    enabled: FIELD_SCHEMAS.enabled.default(d.enabled).describe('Disabled sources do not run.'),
    schedule: sourceScheduleSchema
      .nullable()
      .default(d.schedule)
      .describe('When it runs on its own (exactly one of cron or every); none: only when started.'),
    config: z.looseObject({}).optional().describe("The job's settings, checked by the job."),
  });
}

/** The keys a source of the file may have. */
export const SOURCE_KEYS: readonly string[] = Object.keys(sourceSchema([]).shape);

/** The top-level keys of the file: `$schema` lets JSON files name their schema as YAML's comment does. */
export const FILE_KEYS: readonly string[] = ['$schema', 'sources', 'downstreams'];

function fileSchema(jobTypes: readonly string[]) {
  return z.strictObject({
    $schema: z.string().optional().describe('Where this JSON Schema is, for editors.'),
    sources: z.array(sourceSchema(jobTypes)).describe('Every source; `sources apply` makes the table match.'),
    downstreams: z
      .array(downstreamSettingsSchema)
      .optional()
      .describe(
        'The partners sources call (R8: isolation, rate limits, breaker, retry budget); when given, `sources apply` makes the table match (left out: the table stays as it is).',
      ),
  });
}

type JsonObject = Record<string, unknown>;
const objectAt = (value: unknown, ...path: string[]): JsonObject =>
  path.reduce<JsonObject>((o, key) => o[key] as JsonObject, value as JsonObject);

/**
 * The JSON Schema (draft-07, what editors read) of a sources file for `jobs`: each source's
 * `config` is checked by its job's schema (an empty object for a job without one), chosen by
 * `job` with if/then (a source without `job` runs the default job). Pure.
 */
export function sourcesJsonSchema(jobs: JobRegistry): JsonObject {
  const configs = Object.fromEntries(
    jobs.types.map((type) => [type, jobs.find(type)?.config ?? z.strictObject({})]),
  );
  // One conversion for all, so that definitions a job's schema shares land at the root once.
  const carrier = z.strictObject({ file: fileSchema(jobs.types), configs: z.strictObject(configs) });
  const json = z.toJSONSchema(carrier, { target: 'draft-7', io: 'input', unrepresentable: 'any' });
  const file = objectAt(json, 'properties', 'file');
  const source = objectAt(file, 'properties', 'sources', 'items');
  source.allOf = jobs.types.map((type) => ({
    if: {
      properties: { job: { const: type } },
      ...(type === DEFAULT_JOB ? {} : { required: ['job'] }),
    },
    then: { properties: { config: objectAt(json, 'properties', 'configs', 'properties', type) } },
  }));
  const { $schema, definitions } = json as JsonObject;
  return {
    $schema,
    title: 'durable-fetch sources file',
    description: 'The sources of `durable-fetch sources apply -f`. Generated by `npm run schema:sources`.',
    ...file,
    ...(definitions === undefined ? {} : { definitions }),
  };
}
