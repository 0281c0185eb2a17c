// Error classification of activities: status codes and `code` properties to the error types of
// contract/error-types.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { z } from 'zod';
import {
  classify,
  detailsOf,
  failure,
  httpStatusFailure,
  MAX_PARTNER_WORDS,
  partnerMessageOf,
  responseFailure,
} from '../activities/errors.ts';
import { DriverStatementError } from '../db/driver-error.ts';

/** The parts of a failure that retries and dashboards depend on. */
function shape(value: unknown): {
  type: string | undefined | null;
  nonRetryable: boolean | undefined | null;
  code: unknown;
} {
  assert.ok(value instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(value)}`);
  const details = value.details as [{ code?: unknown }] | undefined;
  return { type: value.type, nonRetryable: value.nonRetryable, code: details?.[0]?.code };
}

function withCode(message: string, code: string, extra: object = {}): Error {
  return Object.assign(new Error(message), { code }, extra);
}

describe('errors', () => {
  it('errors: failure marks exactly the retryable error types (contract/error-types.ts) retryable and the others non-retryable', () => {
    const retryable = [
      'Timeout',
      'NetworkError',
      'UpstreamUnavailable',
      'RateLimited',
      'CircuitOpen',
      'DatabaseUnavailable',
    ] as const;
    const nonRetryable = [
      'InvalidInput',
      'InvalidResponse',
      'PermissionDenied',
      'NotFound',
      'IdempotencyConflict',
      'DeadlineExceeded',
      'OutcomeUnknown',
      'LeaseLost',
    ] as const;
    for (const type of retryable) {
      assert.deepEqual(shape(failure(type, 'C', 'm')), { type, nonRetryable: false, code: 'C' });
    }
    for (const type of nonRetryable) {
      assert.deepEqual(shape(failure(type, 'C', 'm')), { type, nonRetryable: true, code: 'C' });
    }
  });

  it('errors: httpStatusFailure maps partner statuses to the error types (contract/error-types.ts) with the right retryability', () => {
    const expected: [number, string, boolean][] = [
      [429, 'RateLimited', false],
      [500, 'UpstreamUnavailable', false],
      [502, 'UpstreamUnavailable', false],
      [503, 'UpstreamUnavailable', false],
      [504, 'UpstreamUnavailable', false],
      [408, 'Timeout', false],
      [401, 'PermissionDenied', true],
      [403, 'PermissionDenied', true],
      [404, 'NotFound', true],
      [410, 'NotFound', true],
      [400, 'InvalidInput', true],
      [422, 'InvalidInput', true],
    ];
    for (const [status, type, nonRetryable] of expected) {
      assert.deepEqual(
        shape(httpStatusFailure(status, 'partner acme')),
        { type, nonRetryable, code: `HTTP_${status}` },
        `${status}`,
      );
    }
  });

  it('errors: httpStatusFailure messages say what failed and the status, nothing more', () => {
    assert.equal(httpStatusFailure(429, 'fetch page 2').message, 'fetch page 2: rate limited (429)');
    assert.equal(httpStatusFailure(503, 'fetch page 2').message, 'fetch page 2: upstream unavailable (503)');
    assert.equal(httpStatusFailure(403, 'fetch page 2').message, 'fetch page 2: permission denied (403)');
    assert.equal(httpStatusFailure(410, 'fetch page 2').message, 'fetch page 2: not found (410)');
    assert.equal(httpStatusFailure(400, 'fetch page 2').message, 'fetch page 2: rejected with status 400');
  });

  it("errors: responseFailure keeps the status mapping and appends the partner's own words, quoted", () => {
    const now = new Date('2026-11-29T10:00:00Z');
    const of = (status: number, body: unknown, headers: Record<string, string> = {}) =>
      responseFailure({ status, headers, body, what: 'partner acme', now });
    const bad = of(400, { error: { code: 'BadRequest', message: 'Invalid value for $top' } });
    assert.deepEqual(shape(bad), { type: 'InvalidInput', nonRetryable: true, code: 'HTTP_400' });
    assert.equal(bad.message, 'partner acme: rejected with status 400: "Invalid value for $top"');
    assert.equal(
      of(503, { message: 'down for maintenance' }).message,
      'partner acme: upstream unavailable (503): "down for maintenance"',
    );
    assert.equal(
      of(404, { detail: 'no such list' }).message,
      'partner acme: not found (404): "no such list"',
    );
    assert.equal(of(401, undefined).message, 'partner acme: permission denied (401)', 'no body, no words');
    assert.equal(
      of(422, '<html>oops</html>').message,
      'partner acme: rejected with status 422',
      'not an object',
    );
    assert.equal(of(400, { message: '  ' }).message, 'partner acme: rejected with status 400');
    assert.equal(
      of(400, { message: 'say "hi"' }).message,
      'partner acme: rejected with status 400: "say \\"hi\\""',
    );
    const limited = of(429, { message: 'slow down' }, { 'retry-after': '2.5' });
    assert.equal(limited.message, 'partner acme: rate limited (429, retry after 3 s): "slow down"');
    assert.equal(detailsOf(limited)?.retryAfterMs, 2_500);
    // Without a body the messages are httpStatusFailure's, word for word.
    for (const status of [400, 401, 403, 404, 408, 410, 422, 429, 500, 503])
      assert.equal(
        of(status, undefined).message,
        httpStatusFailure(status, 'partner acme').message,
        String(status),
      );
  });

  it("errors: responseFailure reads a 403 or 429 whose remaining quota is 0 as RateLimited until its reset (GitHub's primary limit)", () => {
    const now = new Date('2026-11-29T10:00:00Z');
    const epoch = now.getTime() / 1000;
    const github = responseFailure({
      status: 403,
      headers: {
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(epoch + 42),
        'x-ratelimit-limit': '60',
      },
      body: {
        message: 'API rate limit exceeded for 203.0.113.7.',
        documentation_url: 'https://docs.github.com/rest',
      },
      what: 'partner gh',
      now,
    });
    assert.deepEqual(shape(github), { type: 'RateLimited', nonRetryable: false, code: 'HTTP_403' });
    assert.equal(detailsOf(github)?.retryAfterMs, 42_000);
    assert.equal(
      github.message,
      'partner gh: rate limited (403, x-ratelimit-remaining 0, retry after 42 s): "API rate limit exceeded for [ip]."',
    );
    const waitOf = (status: number, headers: Record<string, string>) => {
      const f = responseFailure({ status, headers, what: 'p', now });
      return [f.type, detailsOf(f)?.retryAfterMs];
    };
    // The IETF draft's pair (seconds), Twitter's names, and Retry-After winning over the reset.
    assert.deepEqual(waitOf(429, { 'ratelimit-remaining': '0', 'ratelimit-reset': '9' }), [
      'RateLimited',
      9_000,
    ]);
    assert.deepEqual(
      waitOf(403, { 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': String(epoch + 5) }),
      ['RateLimited', 5_000],
    );
    assert.deepEqual(
      waitOf(403, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '60', 'retry-after': '3' }),
      ['RateLimited', 3_000],
    );
    assert.deepEqual(
      waitOf(403, { 'x-ratelimit-remaining': ' 0 ' }),
      ['RateLimited', undefined],
      'no reset: jitter',
    );
    // A named reset header wins over the built-in ones; a plain 429 reads the built-in ones too.
    const named = responseFailure({
      status: 403,
      headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '60', 'x-reset-in': '4' },
      rateLimitReset: { header: 'X-Reset-In', unit: 'seconds' },
      what: 'p',
      now,
    });
    assert.equal(detailsOf(named)?.retryAfterMs, 4_000);
    assert.deepEqual(waitOf(429, { 'x-ratelimit-reset': '8' }), ['RateLimited', 8_000]);
    // Quota left, or another status: the status decides.
    assert.deepEqual(waitOf(403, { 'x-ratelimit-remaining': '12', 'x-ratelimit-reset': '60' }), [
      'PermissionDenied',
      undefined,
    ]);
    assert.deepEqual(waitOf(401, { 'x-ratelimit-remaining': '0' }), ['PermissionDenied', undefined]);
    assert.deepEqual(waitOf(400, { 'x-ratelimit-remaining': '0' }), ['InvalidInput', undefined]);
    assert.deepEqual(waitOf(503, { 'x-ratelimit-reset': '60' }), ['UpstreamUnavailable', undefined]);
    // A 403 that says when to come back (GitHub's secondary limit) is a wait, not a denial.
    assert.deepEqual(waitOf(403, { 'retry-after': '60' }), ['RateLimited', 60_000]);
    assert.deepEqual(waitOf(403, { 'retry-after': 'whenever' }), ['PermissionDenied', undefined]);
  });

  it('errors: partnerMessageOf finds the message where well-known APIs put it', () => {
    const cases: [unknown, string | undefined][] = [
      [{ error: { code: 'InvalidRequest', message: 'Graph says no' } }, 'Graph says no'],
      [{ error: { type: 'invalid_request_error', message: 'No such customer' } }, 'No such customer'],
      [{ error: 'invalid_grant', error_description: 'Grant expired' }, 'Grant expired'],
      [{ message: 'Bad credentials', documentation_url: 'https://docs.github.com' }, 'Bad credentials'],
      [{ type: 'about:blank', title: 'Bad Request', detail: 'limit must be <= 100' }, 'limit must be <= 100'],
      [{ title: 'Bad Request', status: 400 }, 'Bad Request'],
      [
        { detail: [{ loc: ['query', 'limit'], msg: 'ensure this value is less than 101' }] },
        'ensure this value is less than 101',
      ],
      [{ errors: [{ message: 'Field "x" not found', extensions: {} }] }, 'Field "x" not found'],
      [{ errors: [{ status: '400', title: 'Invalid', detail: 'page[size] too big' }] }, 'page[size] too big'],
      [{ errors: ['plain string error'] }, 'plain string error'],
      [{ errorMessages: ['Issue does not exist'], errors: {} }, 'Issue does not exist'],
      [{ fault: { faultstring: 'Invalid ApiKey', detail: { errorcode: 'x' } } }, 'Invalid ApiKey'],
      [
        [{ message: 'Session expired or invalid', errorCode: 'INVALID_SESSION_ID' }],
        'Session expired or invalid',
      ],
      [{ error: 'RecordNotFound', description: 'Not found' }, 'Not found'],
      [{ ok: false, error: 'invalid_auth' }, 'invalid_auth'],
      [{ message: 42, error: 'fallback_code' }, 'fallback_code'],
      [{ status: 'error' }, undefined],
      [[], undefined],
      [null, undefined],
      ['text', undefined],
    ];
    for (const [body, expected] of cases)
      assert.equal(partnerMessageOf(body), expected, JSON.stringify(body));
  });

  it("errors: the partner's words are scrubbed and bounded: no credential, email, URL or control character reaches a message", () => {
    const token = 'tok-0123456789-SECRET';
    const body = {
      message:
        `invalid request: api_key=${token} for jane.doe@example.com (Bearer ${token}); ` +
        `see https://partner.example/help?sig=abc123 \u001b[31mred\u001b[0m\nforged: line ${token}`,
    };
    const f = responseFailure({
      status: 400,
      headers: {},
      body,
      what: 'partner acme',
      redactValues: [token],
    });
    assert.equal(
      f.message,
      'partner acme: rejected with status 400: "invalid request: api_key=*** for [email] (Bearer ***); see [url] [31mred [0m forged: line ***"',
    );
    for (const leak of [token, 'jane.doe', 'partner.example', 'abc123', '\u001b', '\n'])
      assert.ok(!f.message.includes(leak), leak);
    // A credential the patterns cannot recognise is masked because the caller names it.
    const plain = responseFailure({
      status: 403,
      headers: {},
      body: { error: { message: 'key hunter22 was revoked' } },
      what: 'p',
      redactValues: ['hunter22', 'ab'],
    });
    assert.equal(plain.message, 'p: permission denied (403): "key *** was revoked"');
    const long = partnerMessageOf({ message: `${'word '.repeat(200)}${token}` }, [token]);
    assert.equal([...(long ?? '')].length, MAX_PARTNER_WORDS);
    assert.ok(long?.endsWith('…'));
    assert.ok(!long?.includes('tok-'));
  });

  it('errors: classify turns socket errors into retryable NetworkError and timeouts into Timeout', () => {
    assert.deepEqual(shape(classify(withCode('read ECONNRESET', 'ECONNRESET'), 'fetch')), {
      type: 'NetworkError',
      nonRetryable: false,
      code: 'ECONNRESET',
    });
    assert.deepEqual(shape(classify(withCode('Headers Timeout Error', 'UND_ERR_HEADERS_TIMEOUT'), 'fetch')), {
      type: 'Timeout',
      nonRetryable: false,
      code: 'UND_ERR_HEADERS_TIMEOUT',
    });
    assert.equal(shape(classify(withCode('x', 'ECONNREFUSED'), 'fetch')).type, 'NetworkError');
    assert.equal(shape(classify(withCode('x', 'UND_ERR_CONNECT_TIMEOUT'), 'fetch')).type, 'Timeout');
    assert.equal(shape(classify(withCode('x', 'ETIMEDOUT'), 'fetch')).type, 'Timeout');
  });

  it('errors: classify finds the code on a nested cause, as undici wraps socket errors in "fetch failed"', () => {
    const socket = withCode('connect ECONNREFUSED 10.0.0.7:443', 'ECONNREFUSED');
    const wrapped = new TypeError('fetch failed', { cause: socket });
    assert.deepEqual(shape(classify(wrapped, 'fetch page 0')), {
      type: 'NetworkError',
      nonRetryable: false,
      code: 'ECONNREFUSED',
    });
    const twice = new Error('outer', {
      cause: new Error('middle', { cause: withCode('t', 'UND_ERR_BODY_TIMEOUT') }),
    });
    assert.equal(shape(classify(twice, 'fetch')).type, 'Timeout');
  });

  it('errors: classify maps Prisma P1001 and PostgreSQL connection-class codes to DatabaseUnavailable without echoing hosts', () => {
    const prisma = withCode("Can't reach database server at `db.internal:5432`", 'P1001');
    const classified = classify(prisma, 'store page 3');
    assert.deepEqual(shape(classified), { type: 'DatabaseUnavailable', nonRetryable: false, code: 'P1001' });
    assert.equal((classified as ApplicationFailure).message, 'store page 3: database unavailable');
    for (const code of ['08006', '08001', '57P01', 'P2034', 'P2024']) {
      assert.deepEqual(shape(classify(withCode('db', code), 'store')), {
        type: 'DatabaseUnavailable',
        nonRetryable: false,
        code,
      });
    }
  });

  it('errors: classify reads the SQLSTATE and error kind Prisma 7 nests under meta.driverAdapterError', () => {
    const terminated = withCode('Raw query failed', 'P2010', {
      meta: { driverAdapterError: { cause: { originalCode: '57P01', kind: 'postgres' } } },
    });
    assert.deepEqual(shape(classify(terminated, 'storePage')), {
      type: 'DatabaseUnavailable',
      nonRetryable: false,
      code: '57P01',
    });
    const refused = withCode('Raw query failed', 'P2010', {
      meta: {
        driverAdapterError: { cause: { kind: 'DatabaseNotReachable', host: '127.0.0.1', port: 5499 } },
      },
    });
    const failed = classify(refused, 'claimRun');
    assert.deepEqual(shape(failed), {
      type: 'DatabaseUnavailable',
      nonRetryable: false,
      code: 'DatabaseNotReachable',
    });
    assert.ok(!(failed as Error).message.includes('5499'), 'no host or port in the message');
  });

  it('errors: transient database failures in the shapes Prisma 7 produces are retryable DatabaseUnavailable', () => {
    const prismaError = (code: string, cause: Record<string, unknown>) =>
      Object.assign(new Error('Invalid invocation'), {
        code,
        clientVersion: '7.10.0',
        meta: { driverAdapterError: { name: 'DriverAdapterError', cause } },
      });
    const cases: [string, Error, string][] = [
      [
        'serialization failure behind P2034',
        prismaError('P2034', { originalCode: '40001', kind: 'TransactionWriteConflict' }),
        '40001',
      ],
      ['deadlock', prismaError('P2034', { originalCode: '40P01' }), '40P01'],
      ['database starting up', prismaError('P2010', { originalCode: '57P03' }), '57P03'],
      [
        'too many connections',
        prismaError('P2010', { originalCode: '53300', kind: 'TooManyConnections' }),
        '53300',
      ],
      [
        'socket timeout (a kind, no SQLSTATE)',
        prismaError('P2010', { kind: 'SocketTimeout' }),
        'SocketTimeout',
      ],
      ['transaction could not start in time', prismaError('P2028', {}), 'P2028'],
      [
        'a Prisma error with no code at all',
        Object.assign(new Error('Connection terminated unexpectedly'), { clientVersion: '7.10.0' }),
        'PRISMA_UNKNOWN',
      ],
    ];
    for (const [what, err, code] of cases) {
      assert.deepEqual(
        shape(classify(err, 'storePage')),
        { type: 'DatabaseUnavailable', nonRetryable: false, code },
        what,
      );
    }
    // A data-level Prisma error is not an outage.
    const unique = prismaError('P2002', { originalCode: '23505' });
    assert.equal(shape(classify(unique, 'storePage')).type, 'Internal');
  });

  it('errors: a statement the engine sent through the driver classifies by its cause, as a Prisma one would (R7)', () => {
    const driver = (cause: unknown) => new DriverStatementError('from the driver', { cause });
    const outage: [string, Error, string][] = [
      ['the socket reset', driver(withCode('read ECONNRESET', 'ECONNRESET')), 'ECONNRESET'],
      [
        'the session ended by an administrator',
        driver(withCode('terminating connection', '57P01', { severity: 'FATAL' })),
        '57P01',
      ],
      [
        'a lock not granted in time',
        driver(withCode('lock timeout', '55P03', { severity: 'ERROR' })),
        '55P03',
      ],
      [
        'the connection ended without a code',
        driver(new Error('Connection terminated unexpectedly')),
        'DRIVER_UNKNOWN',
      ],
      [
        'a statement refused after its transaction ended',
        new DriverStatementError('the transaction has already ended', { code: 'TRANSACTION_ENDED' }),
        'TRANSACTION_ENDED',
      ],
    ];
    for (const [what, err, code] of outage) {
      assert.deepEqual(
        shape(classify(err, 'storePage')),
        { type: 'DatabaseUnavailable', nonRetryable: false, code },
        what,
      );
    }
    // A fact about the data is a bug, not an outage.
    const unique = driver(withCode('duplicate key', '23505', { severity: 'ERROR' }));
    assert.equal(shape(classify(unique, 'storePage')).type, 'Internal');
  });

  it('errors: a database refusing connections, in recovery or failing over is DatabaseUnavailable by SQLSTATE class and severity (R7)', () => {
    // The shape Prisma 7 gives when the database refuses connections (ALLOW_CONNECTIONS false, as in
    // maintenance or a managed failover): SQLSTATE 55000, severity FATAL, behind P2010 or P2039.
    const prisma = (code: string, cause: Record<string, unknown>) =>
      Object.assign(new Error('Invalid invocation'), {
        code,
        clientVersion: '7.10.1',
        meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { kind: 'postgres', ...cause } } },
      });
    const outage: [string, Error, string][] = [
      ['not accepting connections', prisma('P2010', { originalCode: '55000', severity: 'FATAL' }), '55000'],
      [
        'the same at transaction start',
        prisma('P2039', { originalCode: '55000', severity: 'FATAL' }),
        '55000',
      ],
      [
        'lock not granted within lock_timeout',
        prisma('P2010', { originalCode: '55P03', severity: 'ERROR' }),
        '55P03',
      ],
      [
        'a write on a standby during failover',
        prisma('P2010', { originalCode: '25006', severity: 'ERROR' }),
        '25006',
      ],
      ['idle-in-transaction timeout', prisma('P2010', { originalCode: '25P03', severity: 'FATAL' }), '25P03'],
      ['statement_timeout', prisma('P2010', { originalCode: '57014', severity: 'ERROR' }), '57014'],
      ['disk full', prisma('P2010', { originalCode: '53100', severity: 'ERROR' }), '53100'],
      ['server I/O error', prisma('P2010', { originalCode: '58030', severity: 'ERROR' }), '58030'],
      [
        'any code with which the server ends the session',
        prisma('P2010', { originalCode: 'XX000', severity: 'FATAL' }),
        'XX000',
      ],
      [
        'a refused socket to the database is the database, not a partner network error',
        Object.assign(new Error('Connection refused'), {
          clientVersion: '7.10.1',
          cause: withCode('x', 'ECONNREFUSED'),
        }),
        'ECONNREFUSED',
      ],
      [
        "node-postgres' own server error (severity + SQLSTATE) ending the session",
        Object.assign(new Error('the database system is in recovery mode'), {
          code: '57P03',
          severity: 'FATAL',
        }),
        '57P03',
      ],
    ];
    for (const [what, err, code] of outage) {
      assert.deepEqual(
        shape(classify(err, 'fetchPage')),
        { type: 'DatabaseUnavailable', nonRetryable: false, code },
        what,
      );
    }
    // Configuration, not an outage, even though the server ends the session: no retry mends them.
    for (const code of ['28P01', '3D000']) {
      const err = prisma('P2010', { originalCode: code, severity: 'FATAL' });
      assert.deepEqual(shape(classify(err, 'claimRun')), { type: 'Internal', nonRetryable: true, code });
    }
    // Facts about the statement or the data stay bugs.
    for (const code of ['22012', '42601', '23503']) {
      const err = prisma('P2010', { originalCode: code, severity: 'ERROR' });
      assert.equal(shape(classify(err, 'storePage')).type, 'Internal', code);
    }
  });

  it('errors: classify passes ApplicationFailures and cancellations through unchanged', () => {
    const typed = failure('IdempotencyConflict', 'KEY_REUSED', 'same key, different request');
    assert.equal(classify(typed, 'store'), typed);
    const cancelled = new CancelledFailure('cancelled by the workflow');
    assert.equal(classify(cancelled, 'fetchPage'), cancelled);
  });

  it('errors: classify is exhaustive: anything it does not recognise is a non-retryable Internal failure', () => {
    const bug = classify(new TypeError('undefined is not a function'), 'store');
    assert.deepEqual(shape(bug), { type: 'Internal', nonRetryable: true, code: 'UNCLASSIFIED' });
    assert.match(
      (bug as Error).message,
      /store: unexpected error \(TypeError: undefined is not a function\)/,
    );
    // A unique violation is a fact about the data, not an outage: not retried as DatabaseUnavailable.
    assert.deepEqual(shape(classify(withCode('Unique constraint failed', 'P2002'), 'store')), {
      type: 'Internal',
      nonRetryable: true,
      code: 'P2002',
    });
    for (const odd of ['a string', null, { code: 42 }])
      assert.equal(shape(classify(odd, 'store')).type, 'Internal');
    const leaky = classify(new Error('connect to postgres://app:s3cret@db:5432/x failed'), 'claimRun');
    assert.doesNotMatch((leaky as Error).message, /s3cret/);
  });

  it('errors: classify maps zod validation errors to InvalidResponse and a TimeoutError to Timeout', () => {
    const parsed = z.object({ records: z.array(z.string()) }).safeParse({ records: 'nope' });
    assert.equal(parsed.success, false);
    assert.deepEqual(shape(classify(parsed.error, 'fetchPage')), {
      type: 'InvalidResponse',
      nonRetryable: true,
      code: 'SCHEMA',
    });
    const timedOut = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    assert.deepEqual(shape(classify(timedOut, 'fetchPage')), {
      type: 'Timeout',
      nonRetryable: false,
      code: 'TIMEOUT',
    });
  });
});
