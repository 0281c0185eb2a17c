// What a partner's response means to the declarative job (jobs/http/responses.ts), pure: the
// source's rules first, then the built-in readings of errors inside a 200 (Slack's `ok: false`, a
// GraphQL `errors` list, a throttled cost), then the engine's default for a refusal — each the error
// it names, with the partner's wait and its own words, scrubbed of the credential.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import type { HttpResponse } from '../activities/http.ts';
import { httpJobConfigSchema } from '../jobs/http/config.ts';
import type { FetchContext } from '../activities/job-api/index.ts';
import type { HttpJobConfig } from '../jobs/http/config.ts';
import { httpJob } from '../jobs/http/index.ts';
import { verdictOf } from '../jobs/http/responses.ts';

const NOW = new Date('2026-12-05T12:00:00Z');
const SECRET = 'xoxb-secret-token-123';
const ctx = { what: 'partner p (http)', redact: [SECRET], now: NOW };

const configWith = (extra: Record<string, unknown> = {}) =>
  httpJobConfigSchema.parse({ request: { path: '/x' }, ...extra });

const response = (status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  status,
  headers,
  body,
  url: new URL('https://partner.example/x'),
});

/** The failure `verdictOf` throws, as the engine sees it. */
function thrown(res: HttpResponse, config = configWith()): ApplicationFailure {
  try {
    verdictOf(res, config, ctx);
  } catch (err) {
    assert.ok(err instanceof ApplicationFailure, String(err));
    return err;
  }
  assert.fail('expected a failure');
}
const detail = (f: ApplicationFailure) => f.details?.[0] as { code: string; retryAfterMs?: number };

describe('http job responses', () => {
  test('a 2xx with a JSON body is a page; one without JSON is INVALID_JSON', () => {
    assert.deepEqual(verdictOf(response(200, { items: [] }), configWith(), ctx), { kind: 'page' });
    assert.equal(detail(thrown(response(200, undefined))).code, 'INVALID_JSON');
  });

  test("Slack's ok: false inside a 200 is the error it names, never a page shape problem", () => {
    const denied = thrown(response(200, { ok: false, error: 'invalid_auth' }));
    assert.equal(denied.type, 'PermissionDenied');
    assert.match(denied.message, /ok: false: "invalid_auth"/);
    const limited = thrown(response(200, { ok: false, error: 'ratelimited' }, { 'retry-after': '3' }));
    assert.equal(limited.type, 'RateLimited');
    assert.equal(detail(limited).retryAfterMs, 3000);
    assert.equal(thrown(response(200, { ok: false, error: 'channel_not_found' })).type, 'NotFound');
    assert.equal(thrown(response(200, { ok: false, error: 'invalid_cursor' })).type, 'InvalidInput');
    assert.deepEqual(verdictOf(response(200, { ok: true, messages: [] }), configWith(), ctx), {
      kind: 'page',
    });
  });

  test('a GraphQL errors list inside a 200 fails with its first message; a throttle waits its cost out', () => {
    const bad = thrown(response(200, { data: null, errors: [{ message: 'Field "nope" does not exist' }] }));
    assert.equal(bad.type, 'InvalidInput');
    assert.match(bad.message, /Field \\"nope\\" does not exist|Field "nope" does not exist/);
    const github = thrown(
      response(
        200,
        { errors: [{ type: 'RATE_LIMITED', message: 'API rate limit exceeded' }] },
        { 'retry-after': '2' },
      ),
    );
    assert.equal(github.type, 'RateLimited');
    assert.equal(detail(github).retryAfterMs, 2000);
    const shopify = thrown(
      response(200, {
        errors: [{ message: 'Throttled', extensions: { code: 'THROTTLED' } }],
        extensions: {
          cost: { requestedQueryCost: 152, throttleStatus: { currentlyAvailable: 52, restoreRate: 50 } },
        },
      }),
    );
    assert.equal(shopify.type, 'RateLimited');
    assert.equal(detail(shopify).retryAfterMs, 2000, '(152 − 52) points at 50 a second');
    assert.deepEqual(verdictOf(response(200, { data: {}, errors: [] }), configWith(), ctx), { kind: 'page' });
  });

  test("the source's rules come first: status, header and body conditions, their wait and message", () => {
    const config = configWith({
      responses: [
        { when: { status: [404] }, then: 'ignore' },
        {
          when: { status: [403], header: { name: 'X-RateLimit-Remaining', equals: '0' } },
          then: 'rate_limited',
          waitHeader: 'X-RateLimit-Reset',
          waitUnit: 'epoch',
        },
        {
          when: { body: { path: 'status', equals: 'pending' } },
          then: 'retry',
          waitPath: 'retry_in_ms',
          waitUnit: 'milliseconds',
        },
        {
          when: { status: [400], body: { path: 'error.code' } },
          then: 'invalid_input',
          messagePath: "['error']['detail']",
        },
        { when: { status: [200], body: { path: 'errors' } }, then: 'success' },
      ],
    });
    assert.equal(verdictOf(response(404, undefined), config, ctx).kind, 'ignore');
    const reset = String(NOW.getTime() / 1000 + 7);
    const limited = thrown(
      response(403, {}, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': reset }),
      config,
    );
    assert.equal(limited.type, 'RateLimited');
    assert.equal(detail(limited).retryAfterMs, 7000);
    const pending = thrown(response(202, { status: 'pending', retry_in_ms: 1500 }), config);
    assert.equal(pending.type, 'UpstreamUnavailable');
    assert.equal(detail(pending).retryAfterMs, 1500);
    const rejected = thrown(
      response(400, { error: { code: 'E1', detail: `bad token ${SECRET} for ops@example.com` } }),
      config,
    );
    assert.equal(rejected.type, 'InvalidInput');
    assert.ok(!rejected.message.includes(SECRET), rejected.message);
    assert.ok(!rejected.message.includes('ops@example.com'), rejected.message);
    assert.deepEqual(verdictOf(response(200, { errors: ['per-record warning'], items: [] }), config, ctx), {
      kind: 'page',
    });
  });

  test("a refusal no rule names gets the engine's default, with the partner's own words", () => {
    const f = thrown(response(400, { error: { message: 'Invalid value for $top' } }));
    assert.equal(f.type, 'InvalidInput');
    assert.match(f.message, /Invalid value for \$top/);
    const quota = thrown(response(403, {}, { 'x-ratelimit-remaining': '0', 'retry-after': '1.5' }));
    assert.equal(quota.type, 'RateLimited');
    assert.equal(detail(quota).retryAfterMs, 1500);
  });

  test('an ignore rule ends paging only on a response without records, and mid-run only on a body field', async () => {
    const config = configWith({
      records: { path: 'items' },
      pagination: { type: 'cursor', path: 'next', limitParam: 'limit' },
      responses: [
        { when: { status: [404] }, then: 'ignore' },
        { when: { status: [200], body: { path: 'count', equals: 0 } }, then: 'ignore' },
      ],
    });
    const fetchWith = async (cursor: string | null, answer: HttpResponse, sourceConfig = config) => {
      const ctx = {
        source: {
          id: 'p',
          name: 'p',
          baseUrl: 'https://partner.example',
          timezone: 'UTC',
          pageSize: 10,
          config: sourceConfig,
        },
        businessDate: '2026-12-01',
        cursor,
        limit: 10,
        idempotencyKey: 'k',
        pagesFetched: 0,
        token: SECRET,
        secret: () => undefined,
        signal: AbortSignal.timeout(5000),
        http: { readResponse: () => Promise.resolve(answer) },
        log: undefined as never,
      } as unknown as FetchContext<HttpJobConfig>;
      try {
        return await httpJob.fetchPage(ctx);
      } catch (err) {
        return detail(err as ApplicationFailure).code;
      }
    };
    const later = JSON.stringify({ at: 'c2' });
    // A day the partner has nothing for: a 404 on the first request.
    assert.deepEqual(await fetchWith(null, response(404, { error: 'not found' })), {
      records: [],
      nextCursor: null,
      end: 'response rule 1 (ignore, status 404): read as an empty last page',
    });
    // A 404 for an expired cursor mid-run is no end, nor is a rule matching a page that holds records.
    assert.equal(await fetchWith(later, response(404, { error: 'cursor expired' })), 'IGNORED_MID_RUN');
    assert.equal(await fetchWith(null, response(404, { items: [{ id: 1 }] })), 'IGNORED_RECORDS');
    // Mid-run, the partner's own statement in the body may end it.
    assert.deepEqual(await fetchWith(later, response(200, { count: 0 })), {
      records: [],
      nextCursor: null,
      end: 'response rule 2 (ignore, status 200): read as an empty last page',
    });
    // Where the partner states a total, the records received before the empty page must make it up.
    const totalled = configWith({
      records: { path: 'items' },
      pagination: { type: 'cursor', path: 'next', limitParam: 'limit', totalPath: 'total' },
      responses: [{ when: { status: [200], body: { path: 'count', equals: 0 } }, then: 'ignore' }],
    });
    const at5 = JSON.stringify({ at: 'c2', n: 5 });
    assert.equal(await fetchWith(at5, response(200, { count: 0, total: 7 }), totalled), 'TOTAL_MISMATCH');
    assert.equal(
      ((await fetchWith(at5, response(200, { count: 0, total: 5 }), totalled)) as { nextCursor: unknown })
        .nextCursor,
      null,
    );
  });
});
