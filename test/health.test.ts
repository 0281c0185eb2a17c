// R10's backlog rule (client/health.ts backlogRisk), pure: a growing oldest age or completion
// below arrival over the window is a risk; a short spike is not.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backlogRisk } from '../client/health.ts';

const NOW = new Date('2026-11-29T12:10:00Z');
const WINDOW = 600_000;

/** One sample every 30 s over the last 10 minutes: ages from `age(i)`, rates from `rates(i)`. */
function series(
  age: (i: number) => number,
  rates: (i: number) => { add: number; dispatch: number; backlog: number } = () => ({
    add: 1,
    dispatch: 1,
    backlog: 3,
  }),
) {
  return Array.from({ length: 21 }, (_, i) => {
    const r = rates(i);
    return {
      at: new Date(NOW.getTime() - WINDOW + i * 30_000),
      oldestAgeSeconds: age(i),
      backlog: r.backlog,
      addRate: r.add,
      dispatchRate: r.dispatch,
    };
  });
}

describe('backlog risk', () => {
  it('an oldest age that keeps growing with wall time is a risk', () => {
    const v = backlogRisk(
      series((i) => 120 + i * 30),
      NOW,
      { windowMs: WINDOW },
    );
    assert.equal(v.risk, true);
    assert.match(v.reason, /oldest task age grew from 120 s to 720 s/);
  });

  it('a short spike that falls again is not', () => {
    // Grows for three minutes, then drains.
    const v = backlogRisk(
      series((i) => (i < 6 ? i * 30 : i < 9 ? 180 - (i - 6) * 60 : 0)),
      NOW,
      { windowMs: WINDOW },
    );
    assert.deepEqual(v, { risk: false, reason: 'oldest age not growing; completion keeps up' });
  });

  it('a steady small backlog whose age does not grow is not', () => {
    assert.equal(
      backlogRisk(
        series(() => 2),
        NOW,
        { windowMs: WINDOW },
      ).risk,
      false,
    );
  });

  it('completion below arrival in every sample with tasks waiting is a risk, even while ages stay small', () => {
    const v = backlogRisk(
      series(
        (i) => (i % 2 === 0 ? 5 : 3),
        () => ({ add: 4, dispatch: 3, backlog: 10 }),
      ),
      NOW,
      { windowMs: WINDOW },
    );
    assert.equal(v.risk, true);
    assert.match(v.reason, /completion \(3\.00\/s\) below arrival \(4\.00\/s\)/);
  });

  it('completion catching up in one sample clears it', () => {
    const v = backlogRisk(
      series(
        () => 3,
        (i) => (i === 10 ? { add: 4, dispatch: 5, backlog: 10 } : { add: 4, dispatch: 3, backlog: 10 }),
      ),
      NOW,
      { windowMs: WINDOW },
    );
    assert.equal(v.risk, false);
  });

  it('less than half a window of history is not enough to judge', () => {
    const recent = series((i) => i * 100).slice(-5); // two minutes
    assert.deepEqual(backlogRisk(recent, NOW, { windowMs: WINDOW }), {
      risk: false,
      reason: 'not enough history yet',
    });
  });
});
