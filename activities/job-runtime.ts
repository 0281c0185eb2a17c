/**
 * How the engine runs a job's code: the job found by type, its view of the source (config
 * validated at run time too), partner access resolved at call time, and everything a job returns
 * checked before the engine trusts it. A job that throws something other than an engine failure
 * (a plain Error, a TypeError) fails the step as a non-retryable `Internal`, never a crash loop.
 */
import type { PageSource } from '../db/pages/page-store.ts';
import type { Source } from '../prisma/generated/client.ts';
import type { ActivityDeps } from './deps.ts';
import { classify, failure } from './errors.ts';
import type { AnyJob, FetchedPage, JobSource, PartnerAccess, StoredRecord } from './job-api/define.ts';
import { parseJobConfig } from './job-api/registry.ts';
import { bearerToken } from './sources.ts';
import { MAX_CURSOR_LENGTH } from '../contract/input-limits.ts';

// The workflow checks a cursor carried in its input against the same bound.
export { MAX_CURSOR_LENGTH } from '../contract/input-limits.ts';
// What a run accepts from one response (checkedPage's `maxRecords`), beside the other bounds.
export { MAX_RECORDS_PER_RESPONSE } from './job-api/define.ts';

/** Longest record id stored (`fetched_record.external_id` and the ids in page events). */
export const MAX_RECORD_ID_LENGTH = 200;

/** The job of `source`, and the source as the job sees it (its config parsed by the job's schema). */
export function jobOf(
  deps: Pick<ActivityDeps, 'jobs'>,
  source: PageSource,
): { job: AnyJob; view: JobSource<unknown> } {
  const job = deps.jobs.get(source.jobType);
  const parsed = parseJobConfig(job, source.config);
  if (!parsed.ok) {
    throw failure(
      'InvalidInput',
      'SOURCE_CONFIG_INVALID',
      `source '${source.id}': its config does not fit job '${job.type}' (${parsed.problems.join('; ')})`,
    );
  }
  const view = {
    id: source.id,
    name: source.name,
    baseUrl: source.baseUrl,
    timezone: source.timezone,
    pageSize: source.pageSize,
    config: parsed.config,
  };
  return { job, view };
}

/** Partner access for one call: the source's token resolved now (R2), the activity's signal. */
export function partnerAccess(
  deps: Pick<ActivityDeps, 'http' | 'secret' | 'log' | 'tokens'>,
  source: Source,
  signal: AbortSignal,
): PartnerAccess {
  const { tokens } = deps;
  return {
    http: deps.http,
    signal,
    token: bearerToken(source, deps.secret),
    secret: deps.secret,
    oauthToken: (id, request) =>
      tokens
        ? tokens.accessToken(id, request)
        : Promise.reject(
            failure(
              'PermissionDenied',
              'CREDENTIALS_KEY_MISSING',
              `source '${source.id}' uses OAuth2 credential ${id}, and this process has no credentials key (DF_SECRET_CREDENTIALS_KEY)`,
            ),
          ),
    log: deps.log,
  };
}

/** Runs a job hook; anything it throws is classified (a plain Error becomes `Internal`). */
export async function inJob<T>(job: AnyJob, hook: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw classify(err, `job ${job.type} ${hook}`);
  }
}

const NUL = String.fromCharCode(0);
/** How JSON writes U+0000 in a string or a key (it always escapes it). */
const ESCAPED_NUL = '\\u0000';

/**
 * Checks a page a job's `fetchPage` returned against the engine's contract. `maxRecords` is what
 * the caller accepts from one response: a run takes {@link MAX_RECORDS_PER_RESPONSE} whatever it
 * asked for (it stores the overflow as the pages after), so a partner's own page size is no error.
 * @throws ApplicationFailure InvalidResponse (non-retryable): `PAGE_SHAPE` (not `{records: [],
 *   nextCursor: string|null}`), `TOO_MANY_RECORDS` (more than `maxRecords`), `CURSOR_TOO_LONG`,
 *   `RECORD_WITHOUT_ID` (the job's `recordId` gives no usable id), `RECORD_ID_TOO_LONG`,
 *   `NUL_CHARACTER` (a record or the cursor holds U+0000, which PostgreSQL cannot store).
 */
export function checkedPage(
  job: AnyJob,
  page: unknown,
  maxRecords: number,
  what: string,
): FetchedPage<unknown> {
  const p = page as Partial<FetchedPage<unknown>> | null;
  const cursor = p?.nextCursor;
  if (
    !p ||
    !Array.isArray(p.records) ||
    !(cursor === null || (typeof cursor === 'string' && cursor !== ''))
  ) {
    throw failure('InvalidResponse', 'PAGE_SHAPE', `${what}: unexpected response shape`);
  }
  // Bounded: the whole response is staged in one statement, and kept in memory until then.
  if (p.records.length > maxRecords) {
    throw failure(
      'InvalidResponse',
      'TOO_MANY_RECORDS',
      `${what}: ${p.records.length} records in one response, over the ${maxRecords} accepted`,
    );
  }
  if (cursor !== null && cursor.length > MAX_CURSOR_LENGTH) {
    throw failure(
      'InvalidResponse',
      'CURSOR_TOO_LONG',
      `${what}: next cursor longer than ${MAX_CURSOR_LENGTH} characters`,
    );
  }
  // PostgreSQL stores no U+0000 in text or jsonb (22P05, 22021): such a page is the partner's
  // fault, refused here rather than failing the staging insert as an unclassified error.
  if (cursor !== null && cursor.includes(NUL)) {
    throw failure('InvalidResponse', 'NUL_CHARACTER', `${what}: a next cursor holding a NUL character`);
  }
  for (const record of p.records) {
    idOf(job, record, what);
    if (JSON.stringify(record).includes(ESCAPED_NUL)) {
      throw failure('InvalidResponse', 'NUL_CHARACTER', `${what}: a record holding a NUL character`);
    }
  }
  // What the job says of the page for `sources try`, kept when it has its documented shape.
  const end = typeof p.end === 'string' ? { end: p.end } : {};
  const warnings = Array.isArray(p.warnings)
    ? { warnings: p.warnings.filter((w): w is string => typeof w === 'string') }
    : {};
  return { records: p.records, nextCursor: cursor, ...end, ...warnings };
}

/** The id the job gives `record`, checked. */
export function idOf(job: AnyJob, record: unknown, what: string): string {
  let id: unknown;
  try {
    id = typeof record === 'object' && record !== null ? job.recordId(record) : undefined;
  } catch {
    id = undefined;
  }
  if (typeof id !== 'string' || id === '') {
    throw failure('InvalidResponse', 'RECORD_WITHOUT_ID', `${what}: a record without an id`);
  }
  if (id.length > MAX_RECORD_ID_LENGTH) {
    throw failure(
      'InvalidResponse',
      'RECORD_ID_TOO_LONG',
      `${what}: a record id longer than ${MAX_RECORD_ID_LENGTH} characters`,
    );
  }
  return id;
}

/**
 * A staged page's records with their ids, one per id: a partner may repeat an id within a page
 * (offset paging), and the last occurrence wins (at the place of the first).
 */
export function byRecordId(job: AnyJob, records: readonly unknown[], what: string): StoredRecord<unknown>[] {
  const byId = new Map<string, unknown>();
  for (const record of records) byId.set(idOf(job, record, what), record);
  return [...byId].map(([id, record]) => ({ id, record }));
}
