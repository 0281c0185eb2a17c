// Topic routing of outbox events to sinks, and the Temporal sink's error types: pure logic.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ServiceError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { parseRoutes, sinkFor } from '../contract/outbox-routes.ts';
import { temporalFailure } from '../worker/outbox/start-workflow-sink.ts';

describe('outbox routes', () => {
  it('the first matching route wins; a pattern ending in * matches a prefix, any other only itself', () => {
    const routes = parseRoutes('fetch.page_stored=nats,fetch.*=webhook,temporal.start_workflow=temporal');
    assert.ok(Array.isArray(routes));
    assert.equal(sinkFor(routes, 'fetch.page_stored'), 'nats');
    assert.equal(sinkFor(routes, 'fetch.run_completed'), 'webhook');
    assert.equal(sinkFor(routes, 'temporal.start_workflow'), 'temporal');
    assert.equal(sinkFor(routes, 'temporal.start_workflow.v2'), undefined);
    assert.equal(sinkFor(routes, 'fetchx'), undefined);
    assert.equal(sinkFor(parseRoutes('*=webhook') as never, 'anything.at.all'), 'webhook');
  });

  it('bad routes are refused with the part that is wrong', () => {
    assert.deepEqual(parseRoutes(''), { problem: 'no routes' });
    assert.deepEqual(parseRoutes('a=b=c'), {
      problem: "'a=b=c' is not pattern=sink (pattern: a topic, or a prefix ending in *)",
    });
    assert.deepEqual(parseRoutes('fe*tch=webhook'), {
      problem: "'fe*tch=webhook' is not pattern=sink (pattern: a topic, or a prefix ending in *)",
    });
    assert.deepEqual(parseRoutes('x=kafka'), {
      problem: "unknown sink 'kafka' (sinks: webhook, nats, temporal)",
    });
  });
});

describe('temporal sink error types', () => {
  const grpc = (code: number) =>
    new ServiceError('start failed', { cause: Object.assign(new Error('grpc'), { code }) });

  it('permanent gRPC codes (invalid argument, not found, permission denied…) are non-retryable InvalidInput', () => {
    for (const code of [3, 5, 7, 9, 16]) {
      const f = temporalFailure(grpc(code));
      assert.ok(f instanceof ApplicationFailure);
      assert.deepEqual([f.type, f.nonRetryable], ['InvalidInput', true], `code ${code}`);
    }
  });

  it('every other gRPC code, and errors that are not gRPC at all, are retryable UpstreamUnavailable', () => {
    for (const err of [grpc(14), grpc(4), grpc(8), grpc(13), grpc(2), new Error('Connection closed')]) {
      const f = temporalFailure(err);
      assert.ok(f instanceof ApplicationFailure);
      assert.deepEqual([f.type, f.nonRetryable], ['UpstreamUnavailable', false], String(err));
    }
  });
});
