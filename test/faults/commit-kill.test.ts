// R12 (crash at each step), R1, R5, R6; issue 35: PostgreSQL killed (SIGQUIT, then crash recovery)
// at the end of each write a run's steps commit — before the COMMIT reaches the server (nothing
// committed) and after the server answered it (committed, the worker never hears so). Whatever
// the worker saw, the step's idempotency settles it: the run ends as it should, with each record,
// event, key, ledger row and partner-side effect once. The quick subset: test/commit-kill.e2e.test.ts.
import { after, before, describe, it } from 'node:test';
import { KILL_CASES, startKillStack, type KillStack } from '../helpers/commit-kill.ts';

let stack: KillStack;
before(async () => {
  stack = await startKillStack();
});
after(async () => {
  await stack?.stop();
});

describe('PostgreSQL killed at the end of each committing step', () => {
  for (const c of KILL_CASES) {
    for (const point of ['before', 'after'] as const) {
      it(`${c.step}: killed ${point} its COMMIT reached the server`, { timeout: 300_000 }, async (t) => {
        const { statements, settledMs } = await stack.run(c, point);
        t.diagnostic(`killed at: ${statements.at(-1)?.slice(0, 80).replace(/\s+/g, ' ')}`);
        t.diagnostic(`run settled ${(settledMs / 1000).toFixed(1)} s after PostgreSQL was back`);
      });
    }
  }
});
