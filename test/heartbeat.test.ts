// Heartbeats on a timer (activities/run/heartbeat.ts): sent by a regular activity, never by a local
// one, which has none (the SDK's core warns about every heartbeat a local activity sends).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from '@temporalio/activity';
import { heartbeatEvery, heartbeatNow } from '../activities/run/heartbeat.ts';

/** The part of an activity's context the heartbeats use, recording each heartbeat's details. */
function fakeContext(isLocal: boolean) {
  const beats: unknown[] = [];
  const ctx = {
    info: { isLocal, heartbeatTimeoutMs: 30 },
    heartbeat: (details: unknown) => void beats.push(details),
  } as unknown as Context;
  return { ctx, beats };
}

describe('heartbeats', () => {
  it('a regular activity heartbeats on the timer and on demand; a local one never does', async () => {
    const regular = fakeContext(false);
    const local = fakeContext(true);
    const stops = [regular, local].map(({ ctx }) => heartbeatEvery(ctx, () => 'on the timer'));
    // As long as the regular one takes to beat twice on its timer (every 10 ms here); a timer
    // that never fires fails the assertion below after 10 s instead of hanging the test.
    for (let waited = 0; regular.beats.length < 2 && waited < 10_000; waited += 5) await sleep(5);
    for (const stop of stops) stop();
    for (const { ctx } of [regular, local]) heartbeatNow(ctx, 'now');

    assert.deepEqual(regular.beats.slice(0, 2), ['on the timer', 'on the timer']);
    assert.equal(regular.beats.at(-1), 'now');
    assert.deepEqual(local.beats, []);
  });
});
