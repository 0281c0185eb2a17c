// The pure parts of tracing (R10, R11): when the OTEL_* variables turn export on, and how a URL
// is recorded on a span without the credentials a partner may take in its query string.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { REDACTED_QUERY_VALUE, urlForSpan } from '../runtime/otel-spans.ts';
import { isUserFacingError } from '../runtime/errors.ts';
import { createTracing } from '../runtime/tracing.ts';
import { tracingWanted } from '../runtime/tracing-env.ts';

describe('tracing settings', () => {
  it('tracing: export is on with an OTLP endpoint, off without one or when the SDK or exporter is turned off', () => {
    assert.equal(tracingWanted({}), false);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }), true);
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    assert.equal(tracingWanted({ ...on, OTEL_SDK_DISABLED: 'TRUE' }), false);
    assert.equal(tracingWanted({ ...on, OTEL_SDK_DISABLED: 'false' }), true);
    assert.equal(tracingWanted({ ...on, OTEL_TRACES_EXPORTER: 'none' }), false);
    assert.equal(tracingWanted({ ...on, OTEL_TRACES_EXPORTER: 'otlp' }), true);
  });

  it('tracing: an OTLP protocol this build cannot speak (gRPC) is refused with one line naming the setting', () => {
    const set = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' };
    Object.assign(process.env, set);
    try {
      assert.throws(
        () => createTracing('test', () => undefined),
        (err: unknown) =>
          isUserFacingError(err) &&
          /^OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported/.test(err.message) &&
          !err.message.includes('\n'),
      );
    } finally {
      for (const name of Object.keys(set)) delete process.env[name];
    }
  });
});

describe('span URLs', () => {
  it('tracing: a URL on a span keeps its origin, path and query names, never a user, password, query value or fragment', () => {
    const url = new URL(
      'https://user:pa55@api.example.com:8443/v1/items?api_key=s3cret&page=2&api_key=again#frag',
    );
    const shown = urlForSpan(url);
    assert.equal(
      shown,
      `https://api.example.com:8443/v1/items?api_key=${REDACTED_QUERY_VALUE}&page=${REDACTED_QUERY_VALUE}`,
    );
    for (const secret of ['user', 'pa55', 's3cret', 'again', 'frag'])
      assert.ok(!shown.includes(secret), secret);
    assert.equal(urlForSpan(new URL('http://127.0.0.1:9/records')), 'http://127.0.0.1:9/records');
  });
});
