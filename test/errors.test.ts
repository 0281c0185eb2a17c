// Error classification of activities: status codes and `code` properties to DESIGN's error types.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { z } from 'zod';
import { classify, failure, httpStatusFailure } from '../activities/errors.ts';
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
  it("errors: failure marks exactly DESIGN's retryable types retryable and the others non-retryable", () => {
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

  it('errors: httpStatusFailure maps partner statuses to DESIGN types with the right retryability', () => {
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
