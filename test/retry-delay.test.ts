// Pure retry timing: full jitter, Retry-After in every legal form, rate-limit reset headers, clamping, deadlines.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fullJitterMs, nextRetry, parseRateLimitReset, parseRetryAfter } from '../activities/retry/delay.ts';

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

  void it('Retry-After is read as integer or fractional seconds, whitespace around ignored', () => {
    const now = new Date('2026-11-29T10:00:00Z');
    assert.equal(parseRetryAfter('120', now), 120_000);
    assert.equal(parseRetryAfter('0', now), 0);
    assert.equal(parseRetryAfter('2.0', now), 2_000);
    assert.equal(parseRetryAfter('0.5', now), 500);
    assert.equal(parseRetryAfter('1.5', now), 1_500);
    assert.equal(parseRetryAfter('.25', now), 250);
    assert.equal(parseRetryAfter('0.0001', now), 1, 'rounded up to the millisecond, never to "at once"');
    assert.equal(parseRetryAfter('  30 \t', now), 30_000);
  });

  void it('Retry-After is read as an HTTP-date in its three forms, a past date meaning now', () => {
    const now = new Date('2026-11-29T10:00:00Z');
    assert.equal(parseRetryAfter('Sun, 29 Nov 2026 10:00:30 GMT', now), 30_000, 'IMF-fixdate');
    assert.equal(parseRetryAfter(' Sun, 29 Nov 2026 10:01:00 GMT ', now), 60_000);
    assert.equal(parseRetryAfter('Sunday, 29-Nov-26 10:00:45 GMT', now), 45_000, 'RFC 850');
    assert.equal(parseRetryAfter('Sun Nov 29 10:00:05 2026', now), 5_000, 'asctime');
    assert.equal(parseRetryAfter('Tue Dec  1 10:00:00 2026', now), 2 * 86_400_000, 'asctime, one-digit day');
    assert.equal(parseRetryAfter('Sun, 29 Nov 2026 09:00:00 GMT', now), 0, 'a past date means now');
    // RFC 850's two-digit year: more than 50 years ahead is read as the past century's.
    assert.equal(parseRetryAfter('Saturday, 29-Nov-80 10:00:00 GMT', now), 0, '1980, not 2080');
    assert.equal(
      parseRetryAfter('Sunday, 29-Nov-76 10:00:00 GMT', now),
      Date.UTC(2076, 10, 29, 10) - now.getTime(),
      '2076: 50 years ahead',
    );
  });

  void it('Retry-After that is negative, garbage or an impossible date is ignored', () => {
    const now = new Date('2026-11-29T10:00:00Z');
    for (const bad of [
      undefined,
      '',
      '  ',
      'soon',
      'soon 5',
      '-5',
      '-0.5',
      '+5',
      '1e3',
      '0x10',
      '5 s',
      '1.2.3',
      'Infinity',
      '2026-13-99',
      '2026-11-29T10:00:30Z',
      'Sun, 31 Nov 2026 10:00:30 GMT',
      'Sun, 29 Nov 2026 24:00:30 GMT',
      'Sun, 29 Nov 2026 10:00:30 PST',
      'Sun, 29 Foo 2026 10:00:30 GMT',
      'Sun Nov 29 10:00:05 2026 GMT',
      '9'.repeat(400),
    ])
      assert.equal(parseRetryAfter(bad, now), undefined, String(bad));
  });

  void it('a rate-limit reset is read in its unit, or guessed from its size when the partner did not name one', () => {
    const now = new Date('2026-11-29T10:00:00Z');
    const epoch = now.getTime() / 1000;
    assert.equal(parseRateLimitReset('30', 'seconds', now), 30_000);
    assert.equal(parseRateLimitReset('1.5', 'seconds', now), 1_500);
    assert.equal(parseRateLimitReset('250', 'milliseconds', now), 250);
    assert.equal(parseRateLimitReset(String(epoch + 12), 'epoch', now), 12_000);
    assert.equal(parseRateLimitReset(String(epoch - 12), 'epoch', now), 0, 'a reset in the past means now');
    assert.equal(parseRateLimitReset('42', 'guess', now), 42_000, 'small: seconds to wait');
    assert.equal(parseRateLimitReset(String(epoch + 7), 'guess', now), 7_000, 'from 10^9: an epoch second');
    assert.equal(parseRateLimitReset(String(now.getTime() + 900), 'guess', now), 900, 'from 10^12: epoch ms');
    for (const bad of [undefined, '', 'soon', '-1', '1e3', 'Sun, 29 Nov 2026 10:00:30 GMT'])
      assert.equal(parseRateLimitReset(bad, 'guess', now), undefined, String(bad));
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
