/**
 * The declarative job, `http`: a REST partner described by configuration only (config.ts) —
 * request, auth, records, pagination, response rules, redirects, rate limit, limits — with every
 * engine guarantee of a code job. Records land in `fetched_record`, one `fetch.page_stored` event
 * per page (as the demo job's). A run ends only for a reason its paging config names (paging.ts);
 * guardrails, each a non-retryable failure with its code: `PATH_NOT_FOUND`, `NEXT_CURSOR_MISSING`,
 * `TOTAL_MISMATCH`, `OFF_ORIGIN_NEXT_URL`, `CURSOR_LOOP` (also run-wide, by the engine),
 * `MAX_PAGES_EXCEEDED`, `RESPONSE_TOO_LARGE`, `MAX_RECORDS_PER_PAGE_EXCEEDED`, `RECORD_WITHOUT_ID`,
 * `RECORD_ID_TOO_LONG` (the engine's); errors the partner puts inside a 200 (responses.ts).
 */
import { credentialValuesOf, withoutQueryParam } from '../../activities/http.ts';
import { defineJob, failure, type FetchContext, type FetchedPage } from '../../activities/job-api/index.ts';
import { fetchedRecordsReconcile, storeFetchedRecords } from '../fetched-records.ts';
import { type HttpJobConfig, httpJobConfigSchema } from './config.ts';
import { decodePosition, encodePosition, nextPosition, type Position } from './paging.ts';
import { formatPath, notFoundText, readPath, valueAt } from './path.ts';
import { fetchParentChildPage } from './children.ts';
import { watermarkSpecOf } from './incremental.ts';
import { buildRequest } from './request.ts';
import { type Verdict, verdictOf } from './responses.ts';
import type { ParentValues } from './template.ts';

/** A partner record with the id the source's config gives it. */
export interface KeyedRecord {
  id: string;
  record: unknown;
}

/** The id `records.id` gives a record: its value (or values, joined); '' when it has none. */
export function recordIdOf(record: unknown, records: HttpJobConfig['records']): string {
  const parts: string[] = [];
  for (const path of records.id) {
    const value = valueAt(record, path);
    if (!(typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)))) return '';
    if (value === '') return '';
    if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) {
      // JSON numbers past 2^53 were rounded when parsed: two records could share an id and merge.
      throw failure(
        'InvalidResponse',
        'RECORD_ID_NOT_EXACT',
        `a numeric record id beyond 2^53 at ${formatPath(path)}: not exact once parsed (ask the partner for string ids)`,
      );
    }
    parts.push(String(value));
  }
  return parts.join(records.idSeparator);
}

/**
 * A next-page link without the source's query credential: partners often echo every parameter of
 * the request into their links, and a link is kept as the run's cursor (in PostgreSQL and the
 * workflow's history), where a secret must never be. The credential is added again per request.
 */
export function withoutQueryCredential(link: string, auth: HttpJobConfig['auth']): string {
  if (auth.type !== 'api_key' || auth.in !== 'query') return link;
  const url = new URL(link);
  if (!url.searchParams.has(auth.name)) return link;
  return withoutQueryParam(url, auth.name).href;
}

/** True when a next-page link of a link-paged source is the run's first request again. */
function isFirstPage(ctx: FetchContext<HttpJobConfig>, link: string, parent?: ParentValues): boolean {
  const { pagination, auth } = ctx.source.config;
  if (pagination.type !== 'next_url' && pagination.type !== 'link_header') return false;
  const first = buildRequest(ctx, { at: null, skip: 0 }, undefined, parent).url;
  const other = new URL(link);
  // The query credential is the worker's, never in the partner's link: compare without it.
  if (auth.type === 'api_key' && auth.in === 'query') first.searchParams.delete(auth.name);
  first.searchParams.sort();
  other.searchParams.sort();
  return first.href === other.href;
}

/**
 * The records of a response: the list at `records.path` (or the body), each element read at
 * `records.item` when the config names one (GraphQL's `edges[].node`).
 * @throws ApplicationFailure InvalidResponse `PAGE_SHAPE`, `PATH_NOT_FOUND`.
 */
export function recordsOf(
  body: unknown,
  records: HttpJobConfig['records'],
  what: string,
): readonly unknown[] {
  let found: unknown = body;
  if (records.path !== undefined) {
    const read = readPath(body, records.path);
    if (!read.found) {
      throw failure(
        'InvalidResponse',
        'PATH_NOT_FOUND',
        `${what}: ${notFoundText(read, records.path, 'records.path')}`,
      );
    }
    found = read.value;
  }
  if (!Array.isArray(found)) {
    const where = records.path === undefined ? 'the body' : formatPath(records.path);
    throw failure('InvalidResponse', 'PAGE_SHAPE', `${what}: ${where} is not an array of records`);
  }
  const item = records.item;
  if (item === undefined) return found;
  return found.map((element, i) => {
    const read = readPath(element, item);
    if (!read.found) {
      throw failure(
        'InvalidResponse',
        'PAGE_SHAPE',
        `${what}: element ${i} of the records has no ${formatPath(item)} (records.item)`,
      );
    }
    return read.value;
  });
}

/**
 * A response an `ignore` rule matched, as the empty last page the rule says it is — only when it
 * holds no records, and, past the run's first request, only when the partner says so in its body:
 * a status alone mid-run (a 404 or 410 for an expired cursor) must not end a run with records
 * missing.
 * @throws ApplicationFailure InvalidResponse `IGNORED_RECORDS`, `IGNORED_MID_RUN`.
 */
function ignored(
  verdict: Extract<Verdict, { kind: 'ignore' }>,
  body: unknown,
  here: Position,
  ctx: FetchContext<HttpJobConfig>,
  what: string,
): FetchedPage<KeyedRecord> {
  let held = 0;
  try {
    held = body === undefined ? 0 : recordsOf(body, ctx.source.config.records, what).length;
  } catch {
    // No records where the config reads them: nothing is left behind.
  }
  if (held > 0) {
    throw failure(
      'InvalidResponse',
      'IGNORED_RECORDS',
      `${what}: ${verdict.why}, but it holds ${held} records`,
    );
  }
  if (here.at !== null && !verdict.stated) {
    throw failure(
      'InvalidResponse',
      'IGNORED_MID_RUN',
      `${what}: ${verdict.why} after the first page; past it, only a rule on a body field the partner states may end paging`,
    );
  }
  // Where the partner states a total, the records received must still make it up.
  const p = ctx.source.config.pagination;
  const totalPath =
    p.type === 'cursor' || p.type === 'next_url' || p.type === 'link_header' ? p.totalPath : undefined;
  if (totalPath !== undefined && here.at !== null) {
    const stated = valueAt(body, totalPath);
    if (stated !== here.n) {
      throw failure(
        'InvalidResponse',
        'TOTAL_MISMATCH',
        `${what}: ${verdict.why} with ${here.n ?? 0} records received, but the partner states ${typeof stated === 'number' ? stated : 'no total'} (${formatPath(totalPath)})`,
      );
    }
  }
  return { records: [], nextCursor: null, end: verdict.why };
}

/**
 * One partner response of the list `ctx.source.config` describes (a child list's reader passes its
 * own view of the config and its `parent` values: children.ts). A read: repeat-safe.
 */
export async function fetchHttpPage(
  ctx: FetchContext<HttpJobConfig>,
  parent?: ParentValues,
): Promise<FetchedPage<KeyedRecord>> {
  const { config } = ctx.source;
  const what = `partner ${ctx.source.id} (http)`;
  if (ctx.pagesFetched >= config.limits.maxPages) {
    throw failure(
      'InvalidResponse',
      'MAX_PAGES_EXCEEDED',
      `${what}: more than limits.maxPages (${config.limits.maxPages}) partner pages in one run`,
    );
  }
  const here = decodePosition(ctx.cursor, what);
  const { auth } = config;
  const credential = auth.type === 'oauth2' ? auth.credential : undefined;
  let token = credential === undefined ? undefined : await ctx.oauthToken(credential);
  const send = (request: ReturnType<typeof buildRequest>) =>
    ctx.http.readResponse(request.url, {
      method: request.method,
      ...(request.body === undefined ? {} : { body: request.body }),
      headers: request.headers,
      signal: ctx.signal,
      what,
      maxResponseBytes: config.limits.maxResponseBytes,
      redirects: { ...config.redirects, credential: request.credential },
    });
  let request = buildRequest(ctx, here, token, parent);
  let res = await send(request);
  if (res.status === 401 && credential !== undefined && token !== undefined) {
    // The partner refused a token that has not expired (revoked, rotated elsewhere): one new
    // token, shared with every caller that saw the same refusal, and one more try.
    token = await ctx.oauthToken(credential, { rejected: token });
    request = buildRequest(ctx, here, token, parent);
    res = await send(request);
  }
  const verdict = verdictOf(res, config, {
    what,
    // Every form the credential took in this request (a bearer token, a Basic pair's password, a
    // query key…).
    redact: credentialValuesOf(request.url, request.headers, request.credential),
  });
  if (verdict.kind === 'ignore') return ignored(verdict, res.body, here, ctx, what);
  const records = recordsOf(res.body, config.records, what);
  if (records.length > config.limits.maxRecordsPerPage) {
    throw failure(
      'InvalidResponse',
      'MAX_RECORDS_PER_PAGE_EXCEEDED',
      `${what}: ${records.length} records in one response, over limits.maxRecordsPerPage (${config.limits.maxRecordsPerPage})`,
    );
  }
  // The whole response, however many records the partner sent: the engine stores a response
  // larger than asked over as many stored pages as it needs, without asking again. (A cursor with a
  // `skip`, written by an earlier build that asked the same partner page again, takes the rest.)
  const taken = records.slice(here.skip);
  const step = nextPosition(
    config.pagination,
    here,
    {
      body: res.body,
      headers: res.headers,
      records,
      url: res.url,
      asked: request.limitSent ? request.asked : undefined,
    },
    { baseUrl: ctx.source.baseUrl, what, ...(parent === undefined ? {} : { childList: true }) },
  );
  let next = step.next;
  if (
    typeof next?.at === 'string' &&
    (config.pagination.type === 'next_url' || config.pagination.type === 'link_header')
  ) {
    next = { ...next, at: withoutQueryCredential(next.at, config.auth) };
  }
  if (typeof next?.at === 'string' && isFirstPage(ctx, next.at, parent)) {
    // Back to the first request, which the run's cursors never hold (it has none).
    throw failure('InvalidResponse', 'CURSOR_LOOP', `${what}: the next page's link is the first page's`);
  }
  return {
    records: taken.map((record) => ({ id: recordIdOf(record, config.records), record })),
    nextCursor: next === null ? null : encodePosition(next),
    ...(step.end === undefined ? {} : { end: step.end }),
    ...(step.warnings === undefined ? {} : { warnings: step.warnings }),
  };
}

export const httpJob = defineJob<HttpJobConfig, KeyedRecord>({
  type: 'http',
  description:
    'any REST or GraphQL partner, described by configuration (request, auth, records, pagination, responses), into fetched_record',
  config: httpJobConfigSchema,
  recordId: (r) => r.id,
  fetchPage: (ctx) =>
    ctx.source.config.children === undefined ? fetchHttpPage(ctx) : fetchParentChildPage(ctx, fetchHttpPage),
  storePage: (_tx, records, ctx) =>
    storeFetchedRecords(
      ctx.sql,
      records.map((r) => ({ external_id: r.id, data: r.record.record })),
      ctx,
    ),
  reconcile: fetchedRecordsReconcile,
  watermark: (config) => watermarkSpecOf(config.incremental),
});
