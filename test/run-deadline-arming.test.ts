// A run's deadline timer is started only when a step could end past the deadline
// (workflows/run-deadline.ts, R9 "every job has a maximum run time"): a step whose longest wait
// (schedule-to-close, or a timer's duration) ends before the deadline less a slack needs no timer
// yet; one that could end past it, or whose bound is unknown, starts it first. Step durations are
// read as Temporal reads them. Pure unit test; run-deadline.e2e.test.ts runs deadlines on real
// processes, and the replay gate the histories recorded with the eager timer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { msToNumber } from '@temporalio/common/lib/time.js';
import { RETRY_PRESETS } from '../contract/retry-presets.ts';
import { LOCAL_DB_STEP_OPTIONS } from '../workflows/db-steps.ts';
import { PAUSE_CHECK_INTERVAL } from '../workflows/fetch-records.ts';
import { ARMING_SLACK_MS, durationMs, mustArm } from '../workflows/run-deadline.ts';

const MINUTE = 60_000;

test('deadline arming: a step that ends before the deadline less the slack needs no timer yet', () => {
  const step = 10 * MINUTE;
  assert.equal(mustArm(24 * 60 * MINUTE, step), false);
  assert.equal(mustArm(step + ARMING_SLACK_MS + 1, step), false);
});

test('deadline arming: a step that could end past the deadline (or within the slack) starts the timer first', () => {
  const step = 10 * MINUTE;
  assert.equal(mustArm(step + ARMING_SLACK_MS, step), true);
  assert.equal(mustArm(step, step), true);
  assert.equal(mustArm(1, step), true);
  // Already past: armed, and the step is refused (withinDeadline cancels at once).
  assert.equal(mustArm(-5_000, step), true);
});

test('deadline arming: a step of unknown or unbounded length starts the timer at once', () => {
  assert.equal(mustArm(365 * 24 * 60 * MINUTE, undefined), true);
  assert.equal(mustArm(365 * 24 * 60 * MINUTE, Number.POSITIVE_INFINITY), true);
  assert.equal(mustArm(365 * 24 * 60 * MINUTE, Number.NaN), true);
});

test('deadline arming: step durations read as Temporal reads them', () => {
  const durations = [
    ...Object.values(RETRY_PRESETS).flatMap((p) => [
      p.startToCloseTimeout,
      'scheduleToCloseTimeout' in p ? p.scheduleToCloseTimeout : undefined,
    ]),
    LOCAL_DB_STEP_OPTIONS.scheduleToCloseTimeout,
    PAUSE_CHECK_INTERVAL,
    '1.5 hours',
    '250ms',
    '2d',
    '45 secs',
    1_234,
  ].filter((d) => d !== undefined);
  for (const d of durations)
    assert.equal(durationMs(d), msToNumber(d as Parameters<typeof msToNumber>[0]), String(d));
});

test('deadline arming: a duration of another form is unknown (armed at once), never misread', () => {
  for (const d of ['', 'soon', '10 fortnights', '-5m', '1e3', undefined, null, {}]) {
    assert.equal(durationMs(d), undefined, JSON.stringify(d));
    assert.equal(mustArm(24 * 60 * MINUTE, durationMs(d)), true);
  }
});
