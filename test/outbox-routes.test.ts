// Topic routing of outbox events to sinks: pure logic, no services.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRoutes, sinkFor } from '../worker/outbox/sinks.ts';

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
