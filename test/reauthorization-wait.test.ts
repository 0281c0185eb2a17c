// The wait of a run whose OAuth2 credential needs reauthorization (workflows/database-outage.ts):
// 10 s doubling up to 5 min (the default lease time, which each try renews), never shorter than
// its base, and a bound on the waits that still covers more than a day. Pure unit test.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  REAUTHORIZATION_WAIT_MS,
  REAUTHORIZATION_WAITS,
  reauthorizationWait,
} from '../workflows/database-outage.ts';

const DAY_MS = 24 * 60 * 60_000;

test('reauthorization wait: 10 s doubling to at most 5 min, longer by up to a fifth at random', () => {
  for (let n = 1; n <= 40; n++) {
    const base = Math.min(REAUTHORIZATION_WAIT_MS.max, REAUTHORIZATION_WAIT_MS.first * 2 ** (n - 1));
    for (let i = 0; i < 50; i++) {
      const wait = reauthorizationWait(n);
      assert.ok(
        wait >= base && wait <= Math.min(REAUTHORIZATION_WAIT_MS.max, base * 1.2),
        `wait ${n}: ${wait}`,
      );
    }
  }
  assert.ok(reauthorizationWait(1) < 15_000, 'the first try again comes within seconds');
  assert.equal(reauthorizationWait(10_000), REAUTHORIZATION_WAIT_MS.max, 'a huge count stays finite');
});

test('reauthorization wait: the bound on waits covers more than a day, even at the shortest waits', () => {
  let shortest = 0;
  for (let n = 1; n <= REAUTHORIZATION_WAITS; n++) {
    shortest += Math.min(REAUTHORIZATION_WAIT_MS.max, REAUTHORIZATION_WAIT_MS.first * 2 ** (n - 1));
  }
  assert.ok(shortest >= DAY_MS, `${REAUTHORIZATION_WAITS} waits cover ${shortest / 3_600_000} h`);
  // And the history stays far from Temporal's limits: ~11 events a wait.
  assert.ok(REAUTHORIZATION_WAITS * 11 < 4_096);
});
