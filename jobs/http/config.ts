/**
 * The config of the declarative `http` job: how to call a REST or GraphQL partner — request, auth,
 * where the records are, how it pages and how its paging ends, what its responses mean, which
 * redirects to follow, how it says to slow down, and the limits a run keeps to — as data a source
 * carries (`sources add --config`, or a sources file). Every path into a body is parsed here, once
 * (path.ts). Guide: docs/http-sources.md. The JSON Schema of sources files is generated from this.
 */
import { z } from 'zod';
import { CREDENTIAL_HEADERS } from '../../activities/http.ts';
import { MAX_RECORDS_PER_RESPONSE } from '../../activities/job-api/index.ts';
import { SECRET_REF_RE } from '../../runtime/secret-refs.ts';
import { pathSchema as bodyPath } from './path.ts';
import { childrenIssues } from './children-config.ts';
import { incrementalIssues, incrementalSchema } from './incremental.ts';
import { templateProblems, templateStrings } from './template.ts';

/** A `DF_SECRET_*` reference: the name of the environment variable holding a secret, never the secret. */
const secretRef = z
  .string()
  .regex(SECRET_REF_RE, 'expected a DF_SECRET_* reference (the secret stays in the environment)')
  .max(110)
  .describe('name of the DF_SECRET_* environment variable holding the secret');

/** Any name a URL query can carry (`$top`, `page[size]`); it is encoded when sent. */
const paramName = z
  .string()
  .min(1)
  .max(100)
  // eslint-disable-next-line no-control-regex -- control characters are what is refused.
  .regex(/^[^\u0000-\u001f\u007f]+$/, 'expected a parameter name without control characters');
const headerName = z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'expected a header name');
const template = z.string().max(2000).describe('text with placeholders such as {date} or {dayStart}');

/** Headers that carry credentials: set through `auth`, where the secret is a reference. */
const CREDENTIAL_HEADER_NAMES = new Set(CREDENTIAL_HEADERS);

const requestSchema = z
  .strictObject({
    method: z.enum(['GET', 'POST']).default('GET'),
    /** Appended to the source's base URL, e.g. `/v1/orders` or `/accounts/{sourceId}/items`. */
    path: template.describe('appended to the base URL; placeholders allowed'),
    query: z.record(paramName, template).default({}).describe('query parameters; an empty value is left out'),
    headers: z
      .record(headerName, template)
      .default({})
      .refine((h) => Object.keys(h).every((name) => !CREDENTIAL_HEADER_NAMES.has(name.toLowerCase())), {
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
      /** A bearer access token of an OAuth2 credential (`durable-fetch credentials set`). */
      type: z.literal('oauth2'),
      credential: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'expected a credential id'),
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

/** The record's id: one path, or several whose values are joined; always held as a list of paths. */
const recordIdSchema = z
  .union([
    z.string(),
    z
      .array(z.union([z.string(), z.array(z.union([z.string(), z.int()]))]))
      .min(1)
      .max(5),
  ])
  .transform((input) => (Array.isArray(input) ? input : [input]))
  .pipe(z.array(bodyPath).min(1).max(5));

const recordsSchema = z.strictObject({
  /** Where the records are; absent: the body itself is the array. */
  path: bodyPath.optional().describe('where the records are; absent: the body itself is the array'),
  /** Where the record is inside each element of the list (GraphQL's `edges[].node`: `node`). */
  item: bodyPath
    .optional()
    .describe("where the record is inside each element of the list, e.g. node for GraphQL's edges"),
  /** The record's id: a path into the record, or several joined with `idSeparator`. */
  id: recordIdSchema
    .default([['id']])
    .describe('the record id: a path, or a list of paths whose values are joined with idSeparator'),
  idSeparator: z.string().min(1).max(5).default(':'),
});

const limitParam = paramName.describe('query parameter carrying how many records to ask for');
const maxLimit = z.int().min(1).max(1000).describe('most records the partner serves per request');

/** Values of a next cursor or link that say the partner has no more. */
export const END_WHEN = ['null', 'empty', 'absent'] as const;
export type EndWhen = (typeof END_WHEN)[number];

/** How a body-borne cursor or link says paging ends, beside the value itself. */
const bodyEnd = {
  /**
   * Which values of the cursor or link end paging: `null`, `empty` (''), `absent` (the path does not
   * resolve). Any other way it is missing fails the run: a misread path must never look like the end.
   */
  endWhen: z
    .array(z.enum(END_WHEN))
    .min(1)
    .max(3)
    .default(['null', 'empty'])
    .describe('cursor values that end paging: null, empty, absent'),
  /** A boolean in the body: false ends paging (`has_more`, `pageInfo.hasNextPage`). */
  hasMorePath: bodyPath
    .optional()
    .describe('a boolean in the body: false ends paging (has_more, pageInfo.hasNextPage)'),
  /** A boolean in the body: true ends paging (`done`). */
  donePath: bodyPath.optional().describe('a boolean in the body: true ends paging (done)'),
  /** Where the partner states its total number of records: the run must receive exactly that many. */
  totalPath: bodyPath
    .optional()
    .describe('where the partner states its total number of records: the run must receive exactly that many'),
  /** An empty page that still says there is more: `end` paging on it, or `fail` the run. */
  emptyPage: z
    .enum(['fail', 'end'])
    .default('fail')
    .describe('an empty page that still says there is more: end paging on it, or fail the run'),
};

const paginationSchema = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('none') }),
    z.strictObject({
      type: z.literal('cursor'),
      /** Where the next cursor is in the body (`meta.next_cursor`, or `data[-1].id`: the last record's). */
      path: bodyPath.describe(
        "where the next cursor is: meta.next_cursor, or data[-1].id for the last record's id",
      ),
      /** Query parameter the cursor is sent back in; null when the request uses `{cursor}` itself. */
      param: paramName.nullable().default('cursor'),
      limitParam: limitParam.optional(),
      limit: maxLimit.optional(),
      ...bodyEnd,
    }),
    z.strictObject({
      type: z.literal('next_url'),
      /** Where the next page's URL (absolute, or relative to the request's) is in the body. */
      path: bodyPath.describe("where the next page's URL is (absolute, or relative to the response's)"),
      limitParam: limitParam.optional(),
      limit: maxLimit.optional(),
      ...bodyEnd,
    }),
    z.strictObject({
      type: z.literal('link_header'),
      /** The `rel` of the RFC 8288 Link header entry to follow; no such entry ends paging. */
      rel: z
        .string()
        .regex(/^[a-z-]{1,40}$/)
        .default('next'),
      limitParam: limitParam.optional(),
      limit: maxLimit.optional(),
      totalPath: bodyEnd.totalPath,
      emptyPage: bodyEnd.emptyPage,
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
      totalPagesPath: bodyPath
        .optional()
        .describe('where the number of pages is; absent: stop on an empty page'),
    }),
    z.strictObject({
      type: z.literal('offset'),
      param: paramName.default('offset'),
      limitParam: limitParam.default('limit'),
      limit: maxLimit.optional(),
      /** Where the total number of records is in the body; absent: stop on a short page. */
      totalPath: bodyPath
        .optional()
        .describe('where the total number of records is; absent: stop on a short page'),
    }),
  ])
  .default({ type: 'none' });

const rateLimitSchema = z.strictObject({
  /** A header saying when the limit resets, read on a 429 (or 503) that has no Retry-After. */
  resetHeader: headerName,
  /** `epoch`: the second it resets at; `seconds`: seconds to wait. */
  unit: z.enum(['epoch', 'seconds']).default('epoch'),
});

/** What a response means, as a response rule says it. */
export const RESPONSE_MEANINGS = [
  'success',
  'retry',
  'rate_limited',
  'permission_denied',
  'invalid_input',
  'not_found',
  'ignore',
] as const;

const responseRuleSchema = z
  .strictObject({
    /** Every condition given must hold. */
    when: z
      .strictObject({
        /** HTTP statuses the rule applies to; absent: any. */
        status: z
          .array(z.int().min(100).max(599))
          .min(1)
          .max(20)
          .optional()
          .describe('HTTP statuses the rule applies to; absent: any'),
        /** A response header and the text it must equal (case-insensitive); absent value: present at all. */
        header: z
          .strictObject({ name: headerName, equals: z.string().max(200).optional() })
          .optional()
          .describe(
            'a response header and the text it must equal (case-insensitive); without equals: present',
          ),
        /** A field of the JSON body and the value it must equal; absent value: present at all. */
        body: z
          .strictObject({ path: bodyPath, equals: z.json().optional() })
          .optional()
          .describe('a body field and the JSON value it must equal; without equals: present'),
      })
      .refine((w) => w.status ?? w.header ?? w.body, {
        message: 'a rule needs a status, header or body condition',
      }),
    /**
     * `success`: a page like any 2xx; `retry`: a passing outage; `rate_limited`: wait, then ask again;
     * `permission_denied`, `invalid_input`, `not_found`: fail the run; `ignore`: an empty last page.
     */
    then: z
      .enum(RESPONSE_MEANINGS)
      .describe(
        'what the response means: success (a page), retry, rate_limited, permission_denied, invalid_input, not_found, ignore (an empty last page)',
      ),
    /** Where the partner says how long to wait: a header, or a body field. */
    waitHeader: headerName.optional().describe('a header saying how long to wait (with waitUnit)'),
    waitPath: bodyPath.optional().describe('a body field saying how long to wait (with waitUnit)'),
    /** `seconds` (or an HTTP date) to wait, the `epoch` second it resets at, or `milliseconds`. */
    waitUnit: z
      .enum(['seconds', 'epoch', 'milliseconds'])
      .default('seconds')
      .describe('seconds (or an HTTP date) to wait, the epoch second it resets at, or milliseconds'),
    /** Where the partner's own message is in the body (bounded and redacted before it is shown). */
    messagePath: bodyPath
      .optional()
      .describe("where the partner's message is (shown bounded and scrubbed in the failure)"),
  })
  .refine((r) => r.waitHeader === undefined || r.waitPath === undefined, {
    message: 'a rule reads its wait from waitHeader or waitPath, not both',
  });

const redirectsSchema = z
  .strictObject({
    /**
     * `same_origin`: followed with the credential; `any_origin`: also to another origin, and then
     * without the credential; `none`: a redirect fails the run.
     */
    follow: z
      .enum(['none', 'same_origin', 'any_origin'])
      .default('same_origin')
      .describe(
        'same_origin: followed with the credential; any_origin: also elsewhere, without it; none: a redirect fails',
      ),
    maxHops: z.int().min(1).max(10).default(5).describe('redirects followed for one request at most'),
  })
  .default({ follow: 'same_origin', maxHops: 5 })
  .describe('which redirects are followed, and whether the credential goes along');

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
    maxRecordsPerPage: z.int().min(1).max(MAX_RECORDS_PER_RESPONSE).default(DEFAULT_LIMITS.maxRecordsPerPage),
  })
  .default(DEFAULT_LIMITS);

export const httpJobConfigSchema = z
  .strictObject({
    request: requestSchema,
    auth: authSchema,
    records: recordsSchema.default({ id: [['id']], idSeparator: ':' }),
    pagination: paginationSchema,
    rateLimit: rateLimitSchema.optional(),
    /** Rules read before the built-in ones: what a response means (status, header, body field). */
    responses: z
      .array(responseRuleSchema)
      .max(50)
      .default([])
      .describe(
        'rules read before the built-in ones: what a response means, by status, header or body field',
      ),
    redirects: redirectsSchema,
    limits: limitsSchema,
    /** Each run reads what changed since the source's watermark (incremental.ts). */
    incremental: incrementalSchema.optional(),
    /**
     * Parent → child lists: the list above is of parents, and this list is read once per parent,
     * its templates naming the parent's values as `{parent.<path>}` (children.ts).
     */
    children: z
      .strictObject({
        request: requestSchema,
        records: recordsSchema.default({ id: [['id']], idSeparator: ':' }),
        pagination: paginationSchema,
      })
      .optional()
      .describe(
        'parent → child lists: the list read once per parent record (request, records, pagination); templates may name {parent.<path>}',
      ),
  })
  .superRefine((config, ctx) => {
    for (const issue of childrenIssues(config)) ctx.addIssue(issue);
    for (const issue of incrementalIssues(config)) ctx.addIssue(issue);
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
    if (
      (p.type === 'cursor' || p.type === 'next_url') &&
      p.endWhen.includes('absent') &&
      !(p.totalPath ?? p.hasMorePath ?? p.donePath ?? p.limitParam) &&
      !templates.some(([t]) => t.includes('{limit}'))
    ) {
      // A cursor path that reads nothing ends paging then: something else must be able to tell a
      // misread path from the last page (a total, a stop flag, or a full page asked for).
      ctx.addIssue({
        code: 'custom',
        message:
          'endWhen absent needs pagination.totalPath, hasMorePath or donePath, or a limit the request sends (limitParam or {limit}): else a misread cursor path would look like the last page',
        path: ['pagination', 'endWhen'],
      });
    }
    if ((p.type === 'cursor' || p.type === 'next_url') && p.hasMorePath && p.donePath) {
      ctx.addIssue({
        code: 'custom',
        message: 'a stop flag is hasMorePath or donePath, not both',
        path: ['pagination', 'donePath'],
      });
    }
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
export type ResponseRule = HttpJobConfig['responses'][number];
