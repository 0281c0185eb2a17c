// R12 (crash at each step), R5, R6; issue 35: the quick subset of test/faults/commit-kill.test.ts —
// PostgreSQL killed at a page's COMMIT (before it reached the server, and after it committed
// unheard), and after the outcome of a non-idempotent partner call committed unheard. The run
// still ends with each record, event, key and partner-side effect once.
import { after, before, describe, it } from 'node:test';
import { KILL_CASES, startKillStack, type KillStack } from './helpers/commit-kill.ts';

const QUICK: readonly [string, 'before' | 'after'][] = [
  ['storePage', 'before'],
  ['storePage', 'after'],
  ['submit: record its outcome', 'after'],
];

let stack: KillStack;
before(async () => {
  stack = await startKillStack();
});
after(async () => {
  await stack?.stop();
});

describe('PostgreSQL killed at a COMMIT', () => {
  for (const [step, point] of QUICK) {
    const c = KILL_CASES.find((k) => k.step === step);
    if (!c) throw new Error(`no kill case ${step}`);
    it(`${step}: killed ${point} its COMMIT reached the server`, { timeout: 300_000 }, async (t) => {
      const { settledMs } = await stack.run(c, point);
      t.diagnostic(`run settled ${(settledMs / 1000).toFixed(1)} s after PostgreSQL was back`);
    });
  }
});
