// Retry timing applied inside a real activity context (MockActivityEnvironment with the Info that
// Temporal would give): jitter bounds per attempt, Retry-After clamping, the deadline, last attempts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Info } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time.js';
import { MockActivityEnvironment } from '@temporalio/testing';
import { failure } from '../activities/errors.ts';
import { DATABASE_RETRY_CEILING_MS, withRetryTiming } from '../activities/retry/timing.ts';
import { LOCAL_DB_STEP_OPTIONS } from '../workflows/db-steps.ts';

const policy = { initialInterval: 1000, backoffCoefficient: 2, maximumInterval: 60_000, maximumAttempts: 10 };

/** What an activity in attempt `attempt` would throw for `err` (its input's step deadline: `stepDeadlineMs`). */
async function thrown(
  err: ApplicationFailure,
  info: Partial<Info>,
  stepDeadlineMs?: number,
): Promise<ApplicationFailure> {
  const env = new MockActivityEnvironment({
    retryPolicy: policy,
    scheduledTimestampMs: Date.now(),
    scheduleToCloseTimeoutMs: 30 * 60_000,
    ...info,
  });
  try {
    await env.run(() => {
      throw withRetryTiming(err, Date.now(), Math.random, stepDeadlineMs);
    });
  } catch (e) {
    assert.ok(e instanceof ApplicationFailure);
    return e;
  }
  assert.fail('the activity did not throw');
}

void describe('retry timing in an activity', () => {
  void it('each retryable failure gets a jittered delay under a ceiling that doubles per attempt', async () => {
    for (const [attempt, ceiling] of [
      [1, 1000],
      [2, 2000],
      [4, 8000],
      [9, 60_000],
    ] as const) {
      const delays = await Promise.all(
        Array.from({ length: 40 }, () =>
          thrown(failure('UpstreamUnavailable', 'HTTP_502', 'x'), { attempt }),
        ),
      );
      for (const f of delays) {
        assert.equal(f.type, 'UpstreamUnavailable');
        assert.ok(
          typeof f.nextRetryDelay === 'number' && f.nextRetryDelay >= 0 && f.nextRetryDelay < ceiling,
        );
      }
      assert.ok(
        new Set(delays.map((f) => Number(f.nextRetryDelay))).size > 5,
        `attempt ${attempt}: delays are jittered`,
      );
    }
  });

  void it('our own database unavailable: asked again within the short ceiling, whatever the attempt (R7, R12c)', async () => {
    for (const attempt of [1, 5, 9]) {
      const delays = await Promise.all(
        Array.from({ length: 40 }, () =>
          thrown(failure('DatabaseUnavailable', 'ECONNREFUSED', 'storePage: database unavailable'), {
            attempt,
          }),
        ),
      );
      const ceiling = Math.min(DATABASE_RETRY_CEILING_MS, 1000 * 2 ** (attempt - 1));
      for (const f of delays) {
        assert.equal(f.type, 'DatabaseUnavailable');
        assert.ok(typeof f.nextRetryDelay === 'number' && f.nextRetryDelay < ceiling, `attempt ${attempt}`);
      }
      assert.ok(
        new Set(delays.map((f) => Number(f.nextRetryDelay))).size > 5,
        `attempt ${attempt}: jittered`,
      );
    }
  });

  void it("Retry-After sets the delay, clamped to the preset's maximum interval", async () => {
    const asked = await thrown(failure('RateLimited', 'HTTP_429', 'x', { retryAfterMs: 5000 }), {
      attempt: 1,
    });
    assert.equal(asked.nextRetryDelay, 5000);
    const tooLong = await thrown(failure('RateLimited', 'HTTP_429', 'x', { retryAfterMs: 3_600_000 }), {
      attempt: 1,
    });
    assert.equal(tooLong.nextRetryDelay, 60_000);
  });

  void it('a retry that would land past the schedule-to-close deadline fails now as DeadlineExceeded', async () => {
    const f = await thrown(
      failure('RateLimited', 'HTTP_429', 'partner x: rate limited', { retryAfterMs: 5000 }),
      {
        attempt: 2,
        scheduledTimestampMs: Date.now() - 118_000,
        scheduleToCloseTimeoutMs: 120_000,
      },
    );
    assert.equal(f.type, 'DeadlineExceeded');
    assert.equal(f.nonRetryable, true);
    assert.match(
      f.message,
      /partner x: rate limited; the next attempt \(in 5 s\) would be past the deadline/,
    );
  });

  void it("a local fetch retried after a timer: the deadline its input carries counts, not the info's fresh schedule", async () => {
    // What the SDK gives a local activity rescheduled after a durable timer: scheduled now, with
    // the whole schedule-to-close again; the step's real deadline is 5 s away.
    const info = { attempt: 3, scheduledTimestampMs: Date.now(), scheduleToCloseTimeoutMs: 120_000 };
    const rateLimited = () =>
      failure('RateLimited', 'HTTP_429', 'partner x: rate limited', { retryAfterMs: 8000 });
    const late = await thrown(rateLimited(), info, Date.now() + 5_000);
    assert.deepEqual([late.type, late.nonRetryable], ['DeadlineExceeded', true]);
    const inTime = await thrown(rateLimited(), info, Date.now() + 60_000);
    assert.deepEqual([inTime.type, inTime.nextRetryDelay], ['RateLimited', 8000]);
    // The breaker still holding calls back at the real deadline: the workflow waits and runs it again.
    const held = await thrown(
      failure('CircuitOpen', 'BREAKER_OPEN', 'partner x: its circuit breaker is open', {
        retryAfterMs: 30_000,
      }),
      info,
      Date.now() + 5_000,
    );
    assert.deepEqual([held.type, held.nonRetryable], ['CircuitOpen', true]);
  });

  void it('non-retryable failures and last attempts are left alone', async () => {
    const denied = await thrown(failure('PermissionDenied', 'HTTP_401', 'x'), { attempt: 1 });
    assert.equal(denied.nextRetryDelay, undefined);
    const last = await thrown(failure('UpstreamUnavailable', 'HTTP_502', 'x'), { attempt: 10 });
    assert.equal(last.nextRetryDelay, undefined);
    assert.equal(last.nonRetryable, false);
  });
});

void describe('local database steps', () => {
  void it('retry as new local activities, at most 2 s apart, also after an attempt that timed out', () => {
    // The SDK keeps every attempt's start-to-close timer running, so a retry inside the worker can
    // be cut short by an earlier attempt's timer; and it takes the wait after a timed-out attempt
    // from the policy alone (no nextRetryDelay). Every wait must be above the local threshold
    // (a durable timer, then a new local activity with its own timers) and at most the database
    // ceiling.
    const { retry, localRetryThreshold } = LOCAL_DB_STEP_OPTIONS;
    assert.equal(msToNumber(retry.maximumInterval), DATABASE_RETRY_CEILING_MS);
    assert.ok(msToNumber(localRetryThreshold) < msToNumber(retry.initialInterval) * 0.01);
  });
});
