// Pure retry timing: full jitter, Retry-After in both forms, clamping, deadlines.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fullJitterMs, nextRetry, parseRetryAfter } from '../activities/retry-delay.ts';

const backoff = { initialMs: 1000, coefficient: 2, maximumMs: 60_000 };

void describe('retry-delay', () => {
  void it('full jitter stays within a ceiling that grows with the attempt and stops at the maximum', () => {
    assert.equal(
      fullJitterMs(1, backoff, () => 0.999_999),
      999,
    );
    assert.equal(
      fullJitterMs(3, backoff, () => 0.999_999),
      3999,
    );
    assert.equal(
      fullJitterMs(20, backoff, () => 0.999_999),
      59_999,
    );
    assert.equal(
      fullJitterMs(5, backoff, () => 0),
      0,
    );
    const samples = Array.from({ length: 500 }, () => fullJitterMs(4, backoff));
    assert.ok(samples.every((d) => d >= 0 && d < 8000));
    assert.ok(new Set(samples).size > 100, 'delays are spread, not fixed');
  });

  void it('Retry-After is read as seconds or as an HTTP-date, and ignored when malformed', () => {
    const now = new Date('2026-11-29T10:00:00Z');
    assert.equal(parseRetryAfter('120', now), 120_000);
    assert.equal(parseRetryAfter('Sun, 29 Nov 2026 10:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter('Sun, 29 Nov 2026 09:00:00 GMT', now), 0, 'a past date means now');
    for (const bad of [undefined, '', 'soon', '-5', '1.5', '2026-13-99'])
      assert.equal(parseRetryAfter(bad, now), undefined);
  });

  void it("Retry-After wins over jitter but is clamped to the preset's maximum interval", () => {
    assert.deepEqual(nextRetry({ attempt: 1, backoff, retryAfterMs: 5000, nowMs: 0 }), { retryInMs: 5000 });
    assert.deepEqual(nextRetry({ attempt: 1, backoff, retryAfterMs: 3_600_000, nowMs: 0 }), {
      retryInMs: 60_000,
    });
  });

  void it('"retry at once" is sent as 1 ms: Temporal reads a zero delay as none given (its maximum interval)', () => {
    assert.deepEqual(nextRetry({ attempt: 1, backoff, retryAfterMs: 0, nowMs: 0 }), { retryInMs: 1 });
    assert.deepEqual(nextRetry({ attempt: 3, backoff, nowMs: 0, random: () => 0 }), { retryInMs: 1 });
  });

  void it('a wait that would pass the deadline is DeadlineExceeded instead of a sleep into it', () => {
    assert.deepEqual(nextRetry({ attempt: 1, backoff, retryAfterMs: 30_000, nowMs: 0, deadlineMs: 20_000 }), {
      deadlineExceeded: true,
      neededMs: 30_000,
    });
    assert.deepEqual(nextRetry({ attempt: 1, backoff, retryAfterMs: 10_000, nowMs: 0, deadlineMs: 20_000 }), {
      retryInMs: 10_000,
    });
  });
});
