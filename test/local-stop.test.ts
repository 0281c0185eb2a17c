// A local page fetch and its worker's shutdown (activities/pages/local-stop.ts): its partner calls stop on
// the activity's cancellation or on the worker's own stop signal, with that signal's reason (the
// retryable WorkerShutdown, delayed past the local retry threshold), and a fetch that ends leaves
// nothing behind on the process-long stop signal.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, it } from 'node:test';
import { ApplicationFailure, CancelledFailure, type Context } from '@temporalio/activity';
import { localFetchStopped, partnerCallSignal, stoppedByUs } from '../activities/pages/local-stop.ts';
import { LOCAL_FETCH_RETRY_THRESHOLD_MS } from '../contract/retry-presets.ts';

/** The part of an activity's context the signal uses. */
function fakeContext(isLocal: boolean) {
  const cancel = new AbortController();
  const ctx = { info: { isLocal }, cancellationSignal: cancel.signal } as unknown as Context;
  return { ctx, cancel };
}

describe('local fetches and the worker stopping', () => {
  it("a local fetch's calls stop with the worker's reason, a WorkerShutdown retried after a timer", () => {
    const stopping = new AbortController();
    const { ctx } = fakeContext(true);
    const calls = partnerCallSignal(ctx, stopping.signal);
    assert.equal(calls.signal.aborted, false);
    stopping.abort(localFetchStopped());
    assert.equal(calls.signal.aborted, true);
    const reason = calls.signal.reason as ApplicationFailure;
    assert.ok(reason instanceof ApplicationFailure);
    assert.equal(reason.type, 'WorkerShutdown');
    assert.equal(reason.nonRetryable, false);
    assert.ok(
      Number(reason.nextRetryDelay) > LOCAL_FETCH_RETRY_THRESHOLD_MS,
      'past the local retry threshold',
    );
    assert.equal(stoppedByUs(reason), true);
    calls.release();
  });

  it("a local fetch's calls stop on its cancellation too, with the cancellation's reason", () => {
    const stopping = new AbortController();
    const { ctx, cancel } = fakeContext(true);
    const calls = partnerCallSignal(ctx, stopping.signal);
    const cancelled = new CancelledFailure('CANCELLED');
    cancel.abort(cancelled);
    assert.equal(calls.signal.reason, cancelled);
    assert.equal(stoppedByUs(cancelled), true);
    assert.equal(stoppedByUs(new Error('a partner failure')), false);
    calls.release();
  });

  it('a regular activity gets its own cancellation signal: the SDK cancels it at the end of the grace time', () => {
    const stopping = new AbortController();
    const { ctx } = fakeContext(false);
    assert.equal(partnerCallSignal(ctx, stopping.signal).signal, ctx.cancellationSignal);
    assert.equal(getEventListeners(stopping.signal, 'abort').length, 0);
  });

  it('fetches that end leave no listener on the stop signal, however many ran', () => {
    const stopping = new AbortController();
    for (let i = 0; i < 10_000; i++) partnerCallSignal(fakeContext(true).ctx, stopping.signal).release();
    const open = partnerCallSignal(fakeContext(true).ctx, stopping.signal);
    assert.equal(getEventListeners(stopping.signal, 'abort').length, 1, 'only the running one');
    open.release();
    assert.equal(getEventListeners(stopping.signal, 'abort').length, 0);
  });
});
