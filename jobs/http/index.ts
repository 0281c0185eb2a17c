/**
 * The declarative job, `http`: a REST partner described by configuration only (config.ts) —
 * request, auth, records, pagination, rate limit, limits — with every engine guarantee of a code
 * job. Records land in `fetched_record`, one `fetch.page_stored` event per page (as the demo job's).
 * Guardrails, each a non-retryable failure with its code: `OFF_ORIGIN_NEXT_URL`, `CURSOR_LOOP`
 * (also run-wide, by the engine), `MAX_PAGES_EXCEEDED`, `RESPONSE_TOO_LARGE`,
 * `MAX_RECORDS_PER_PAGE_EXCEEDED`, `RECORD_WITHOUT_ID`, `RECORD_ID_TOO_LONG` (the engine's).
 */
import { defineJob, failure, type FetchContext, type FetchedPage } from '../../activities/job-api/index.ts';
import { fetchedRecordsReconcile, storeFetchedRecords } from '../fetched-records.ts';
import { type HttpJobConfig, httpJobConfigSchema } from './config.ts';
import { at, decodePosition, encodePosition, nextPosition, type Position } from './paging.ts';
import { buildRequest } from './request.ts';

/** A partner record with the id the source's config gives it. */
export interface KeyedRecord {
  id: string;
  record: unknown;
}

/** The id `records.id` gives a record: its value (or values, joined); '' when it has none. */
export function recordIdOf(record: unknown, records: HttpJobConfig['records']): string {
  const paths = Array.isArray(records.id) ? records.id : [records.id];
  const parts: string[] = [];
  for (const path of paths) {
    const value = at(record, path);
    if (!(typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)))) return '';
    if (value === '') return '';
    if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) {
      // JSON numbers past 2^53 were rounded when parsed: two records could share an id and merge.
      throw failure(
        'InvalidResponse',
        'RECORD_ID_NOT_EXACT',
        `a numeric record id beyond 2^53 at ${path}: not exact once parsed (ask the partner for string ids)`,
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
  // Pair by pair, the rest left as the partner wrote it (a signed link must stay byte for byte).
  const keyOf = (pair: string) => {
    try {
      return decodeURIComponent((pair.split('=')[0] ?? '').replace(/\+/g, ' '));
    } catch {
      return pair;
    }
  };
  const kept = url.search
    .slice(1)
    .split('&')
    .filter((pair) => keyOf(pair) !== auth.name);
  url.search = kept.length > 0 ? `?${kept.join('&')}` : '';
  return url.href;
}

/** True when a next-page link of a link-paged source is the run's first request again. */
function isFirstPage(ctx: FetchContext<HttpJobConfig>, link: string): boolean {
  const { pagination, auth } = ctx.source.config;
  if (pagination.type !== 'next_url' && pagination.type !== 'link_header') return false;
  const first = buildRequest(ctx, { at: null, skip: 0 }).url;
  const other = new URL(link);
  // The query credential is the worker's, never in the partner's link: compare without it.
  if (auth.type === 'api_key' && auth.in === 'query') first.searchParams.delete(auth.name);
  first.searchParams.sort();
  other.searchParams.sort();
  return first.href === other.href;
}

async function fetchHttpPage(ctx: FetchContext<HttpJobConfig>): Promise<FetchedPage<KeyedRecord>> {
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
  const request = buildRequest(ctx, here);
  const res = await ctx.http.readJson(request.url, {
    method: request.method,
    ...(request.body === undefined ? {} : { body: request.body }),
    headers: request.headers,
    signal: ctx.signal,
    what,
    maxResponseBytes: config.limits.maxResponseBytes,
    ...(config.rateLimit
      ? { rateLimitReset: { header: config.rateLimit.resetHeader, unit: config.rateLimit.unit } }
      : {}),
  });
  const found = config.records.path === undefined ? res.body : at(res.body, config.records.path);
  if (!Array.isArray(found)) {
    const where = config.records.path ?? 'the body';
    throw failure('InvalidResponse', 'PAGE_SHAPE', `${what}: ${where} is not an array of records`);
  }
  const records: readonly unknown[] = found;
  if (records.length > config.limits.maxRecordsPerPage) {
    throw failure(
      'InvalidResponse',
      'MAX_RECORDS_PER_PAGE_EXCEEDED',
      `${what}: ${records.length} records in one response, over limits.maxRecordsPerPage (${config.limits.maxRecordsPerPage})`,
    );
  }
  const rest = records.slice(here.skip);
  const taken = rest.slice(0, ctx.limit);
  let next: Position | null;
  if (rest.length > taken.length) {
    // The partner sent more than asked: take the rest from the same page next time.
    next = { at: here.at, skip: here.skip + taken.length };
  } else {
    next = nextPosition(
      config.pagination,
      here,
      { body: res.body, headers: res.headers, records, url: request.url, asked: request.asked },
      { baseUrl: ctx.source.baseUrl, what },
    );
    if (
      typeof next?.at === 'string' &&
      (config.pagination.type === 'next_url' || config.pagination.type === 'link_header')
    ) {
      next = { ...next, at: withoutQueryCredential(next.at, config.auth) };
    }
    if (typeof next?.at === 'string' && isFirstPage(ctx, next.at)) {
      // Back to the first request, which the run's cursors never hold (it has none).
      throw failure('InvalidResponse', 'CURSOR_LOOP', `${what}: the next page's link is the first page's`);
    }
  }
  return {
    records: taken.map((record) => ({ id: recordIdOf(record, config.records), record })),
    nextCursor: next === null ? null : encodePosition(next),
  };
}

export const httpJob = defineJob<HttpJobConfig, KeyedRecord>({
  type: 'http',
  description:
    'any REST partner, described by configuration (request, auth, records, pagination), into fetched_record',
  config: httpJobConfigSchema,
  recordId: (r) => r.id,
  fetchPage: fetchHttpPage,
  storePage: (_tx, records, ctx) =>
    storeFetchedRecords(
      ctx.sql,
      records.map((r) => ({ external_id: r.id, data: r.record.record })),
      ctx,
    ),
  reconcile: fetchedRecordsReconcile,
});
