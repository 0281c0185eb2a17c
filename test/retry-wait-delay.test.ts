// The delay a run's `next_run_at` is computed from (R1 retry_wait, activities/retry/wait.ts): the
// one handed to Temporal when the failure carries it, else Temporal's own exponential step.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { failure } from '../activities/errors.ts';
import { fenceOf, retryDelayMs } from '../activities/retry/wait.ts';

const policy = { initialInterval: 1000, backoffCoefficient: 2, maximumInterval: 60_000, maximumAttempts: 10 };

void describe('retry-wait delay', () => {
  void it('retry-wait: the delay is the failure’s nextRetryDelay when it carries one (jitter or Retry-After)', () => {
    const limited = ApplicationFailure.create({ type: 'RateLimited', nextRetryDelay: 20_000 });
    assert.equal(retryDelayMs(limited, { attempt: 3, retryPolicy: policy }), 20_000);
    const jittered = ApplicationFailure.create({ type: 'UpstreamUnavailable', nextRetryDelay: '1.5s' });
    assert.equal(retryDelayMs(jittered, { attempt: 1, retryPolicy: policy }), 1_500);
  });

  void it('retry-wait: without one, it is what Temporal computes from the policy: initial × coefficient^(attempt−1), capped', () => {
    const plain = failure('UpstreamUnavailable', 'HTTP_503', 'x: upstream unavailable (503)');
    assert.deepEqual(
      [1, 2, 4, 7, 9].map((attempt) => retryDelayMs(plain, { attempt, retryPolicy: policy })),
      [1_000, 2_000, 8_000, 60_000, 60_000],
    );
    // Temporal's defaults where the policy says nothing: 1 s, ×2, at most 100 × the initial.
    assert.deepEqual(
      [1, 3, 9].map((attempt) => retryDelayMs(plain, { attempt, retryPolicy: {} })),
      [1_000, 4_000, 100_000],
    );
  });

  void it('retry-wait: only an activity whose input carries the run’s id and lease token is a step of a run', () => {
    assert.deepEqual(fenceOf({ fetchRunId: 'r', leaseToken: 't', pageNo: 2 }), {
      fetchRunId: 'r',
      leaseToken: 't',
    });
    for (const input of [
      undefined,
      null,
      'r',
      { fetchRunId: 'r' },
      { actionId: 'a', leaseToken: 't' },
      { fetchRunId: 1, leaseToken: 't' },
    ]) {
      assert.equal(fenceOf(input), undefined, JSON.stringify(input));
    }
  });
});
