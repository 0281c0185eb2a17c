/**
 * The config of the declarative `http` job: how to call a REST partner — request, auth, where the
 * records are, how it pages, how it says to slow down, and the limits a run keeps to — as data a
 * source carries (`sources add --config`, or a sources file). Guide: docs/jobs.md, "A partner
 * with configuration only". The JSON Schema of sources files is generated from this.
 */
import { z } from 'zod';
import { SECRET_REF_RE } from '../../runtime/secret-refs.ts';
import { templateProblems, templateStrings } from './template.ts';

/** A `DF_SECRET_*` reference: the name of the environment variable holding a secret, never the secret. */
const secretRef = z
  .string()
  .regex(SECRET_REF_RE, 'expected a DF_SECRET_* reference (the secret stays in the environment)')
  .max(110)
  .describe('name of the DF_SECRET_* environment variable holding the secret');

/** A dotted path into a JSON body: `data`, `meta.next_cursor`, `items.0.id`. */
export const bodyPath = z
  .string()
  .regex(/^[A-Za-z0-9_$@-]+(\.[A-Za-z0-9_$@-]+)*$/, 'expected a dotted path such as data or meta.next_cursor')
  .max(200);

const paramName = z.string().regex(/^[A-Za-z0-9_.[\]-]{1,100}$/, 'expected a parameter name');
const headerName = z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'expected a header name');
const template = z.string().max(2000).describe('text with placeholders such as {date} or {dayStart}');

/** Headers that carry credentials: set through `auth`, where the secret is a reference. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'x-api-key']);

const requestSchema = z
  .strictObject({
    method: z.enum(['GET', 'POST']).default('GET'),
    /** Appended to the source's base URL, e.g. `/v1/orders` or `/accounts/{sourceId}/items`. */
    path: template.describe('appended to the base URL; placeholders allowed'),
    query: z.record(paramName, template).default({}).describe('query parameters; an empty value is left out'),
    headers: z
      .record(headerName, template)
      .default({})
      .refine((h) => Object.keys(h).every((name) => !CREDENTIAL_HEADERS.has(name.toLowerCase())), {
        message: 'credential headers are set through auth, with a DF_SECRET_* reference',
      }),
    /** JSON body of a POST (search-style APIs); string values may hold placeholders. */
    body: z.json().optional(),
  })
  .refine((r) => r.method === 'POST' || r.body === undefined, {
    message: 'a body needs method POST',
    path: ['body'],
  });

const authSchema = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('none') }),
    z.strictObject({
      type: z.literal('bearer'),
      /** Default: the source's credentials reference. */
      secret: secretRef.optional(),
    }),
    z.strictObject({
      type: z.literal('api_key'),
      in: z.enum(['header', 'query']).default('header'),
      name: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, 'expected a header or parameter name'),
      secret: secretRef.optional(),
    }),
    z.strictObject({
      type: z.literal('basic'),
      /** Not a secret (it is sent in the clear of the header's base64). */
      username: z
        .string()
        .min(1)
        .max(200)
        .regex(/^[^:]*$/, 'a basic username cannot contain ":"'),
      /** The password's reference; default: the source's credentials reference. */
      secret: secretRef.optional(),
    }),
  ])
  .default({ type: 'bearer' });

const recordsSchema = z.strictObject({
  /** Where the records are; absent: the body itself is the array. */
  path: bodyPath.optional(),
  /** The record's id: a path into the record, or several joined with `idSeparator`. */
  id: z.union([bodyPath, z.array(bodyPath).min(1).max(5)]).default('id'),
  idSeparator: z.string().min(1).max(5).default(':'),
});

const limitParam = paramName.describe('query parameter carrying how many records to ask for');
const maxLimit = z.int().min(1).max(1000).describe('most records the partner serves per request');

const paginationSchema = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('none') }),
    z.strictObject({
      type: z.literal('cursor'),
      /** Where the next cursor is in the body; null, empty or absent: the last page. */
      path: bodyPath,
      /** Query parameter the cursor is sent back in; null when the request uses `{cursor}` itself. */
      param: paramName.nullable().default('cursor'),
      limitParam: limitParam.optional(),
      limit: maxLimit.optional(),
    }),
    z.strictObject({
      type: z.literal('next_url'),
      /** Where the next page's URL (absolute, or relative to the request's) is in the body. */
      path: bodyPath,
      limitParam: limitParam.optional(),
      limit: maxLimit.optional(),
    }),
    z.strictObject({
      type: z.literal('link_header'),
      /** The `rel` of the RFC 8288 Link header entry to follow. */
      rel: z
        .string()
        .regex(/^[a-z-]{1,40}$/)
        .default('next'),
      limitParam: limitParam.optional(),
      limit: maxLimit.optional(),
    }),
    z.strictObject({
      type: z.literal('page_number'),
      param: paramName.default('page'),
      start: z.int().min(0).max(1_000_000).default(1),
      step: z.int().min(1).max(1000).default(1),
      /** The partner's page size, the same on every request (pages are numbered by it). */
      limitParam: limitParam.nullable().default('per_page'),
      limit: maxLimit.default(100),
      /** Where the number of pages is in the body; absent: stop on an empty page. */
      totalPagesPath: bodyPath.optional(),
    }),
    z.strictObject({
      type: z.literal('offset'),
      param: paramName.default('offset'),
      limitParam: limitParam.default('limit'),
      limit: maxLimit.optional(),
      /** Where the total number of records is in the body; absent: stop on a short page. */
      totalPath: bodyPath.optional(),
    }),
  ])
  .default({ type: 'none' });

const rateLimitSchema = z.strictObject({
  /** A header saying when the limit resets, read on a 429 (or 503) that has no Retry-After. */
  resetHeader: headerName,
  /** `epoch`: the second it resets at; `seconds`: seconds to wait. */
  unit: z.enum(['epoch', 'seconds']).default('epoch'),
});

/** Default bounds of a run; a source may lower or raise each. */
export const DEFAULT_LIMITS = {
  maxPages: 10_000,
  maxResponseBytes: 8 * 1024 * 1024,
  maxRecordsPerPage: 1_000,
} as const;

const limitsSchema = z
  .strictObject({
    /** Partner requests per run at most. */
    maxPages: z.int().min(1).max(1_000_000).default(DEFAULT_LIMITS.maxPages),
    /** Bytes per response body at most (the body is not read past it; capped by the worker's own). */
    maxResponseBytes: z
      .int()
      .min(1024)
      .max(256 * 1024 * 1024)
      .default(DEFAULT_LIMITS.maxResponseBytes),
    /** Records per partner response at most. */
    maxRecordsPerPage: z.int().min(1).max(100_000).default(DEFAULT_LIMITS.maxRecordsPerPage),
  })
  .default(DEFAULT_LIMITS);

export const httpJobConfigSchema = z
  .strictObject({
    request: requestSchema,
    auth: authSchema,
    records: recordsSchema.default({ id: 'id', idSeparator: ':' }),
    pagination: paginationSchema,
    rateLimit: rateLimitSchema.optional(),
    limits: limitsSchema,
  })
  .superRefine((config, ctx) => {
    const pg = config.pagination;
    if (pg.type === 'offset' && pg.totalPath === undefined && pg.limit === undefined) {
      // A short page ends the run: asking for more than the partner serves would end it early.
      ctx.addIssue({
        code: 'custom',
        message:
          "offset paging without totalPath needs limit (the partner's page size), or a short page could end the run early",
        path: ['pagination', 'limit'],
      });
    }
    // Placeholders are checked now, so that a typo fails `sources add`, not the first run.
    const { path, query, headers, body } = config.request;
    const templates: [string, string[]][] = [
      [path, ['request', 'path']],
      ...Object.entries(query).map(([k, t]): [string, string[]] => [t, ['request', 'query', k]]),
      ...Object.entries(headers).map(([k, t]): [string, string[]] => [t, ['request', 'headers', k]]),
      ...templateStrings(body).map((t): [string, string[]] => [t, ['request', 'body']]),
    ];
    for (const [text, at] of templates) {
      for (const message of templateProblems(text)) ctx.addIssue({ code: 'custom', message, path: at });
    }
    const p = config.pagination;
    if (p.type === 'cursor' && p.param === null && !templates.some(([t]) => t.includes('{cursor}'))) {
      ctx.addIssue({
        code: 'custom',
        message:
          'with param null, the request must send {cursor} itself (in its path, query, headers or body)',
        path: ['pagination', 'param'],
      });
    }
  })
  .describe('a REST partner described by configuration (job http)');

export type HttpJobConfig = z.infer<typeof httpJobConfigSchema>;
export type Pagination = HttpJobConfig['pagination'];
export type Auth = HttpJobConfig['auth'];
