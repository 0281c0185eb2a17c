// R12 (crash at each step), R1, R5, R6; issue 35: PostgreSQL killed (SIGQUIT, then crash recovery)
// at the end of each write a run's steps commit — before the COMMIT reaches the server (nothing
// committed) and after the server committed it, before the worker hears. Whatever the worker saw,
// the step's idempotency settles it: each run ends as it should, judged by the partner's own lists
// (test/helpers/fault-matrix.ts). Three of these run in npm test: test/fault-matrix.e2e.test.ts.
import { after, before, describe, it } from 'node:test';
import { FAULTS, WRITE_POINTS } from '../helpers/fault-matrix-cells.ts';
import { type MatrixStack, startMatrixStack } from '../helpers/fault-matrix.ts';

const STOPPED_HARD = FAULTS.find((f) => f.name === 'PostgreSQL stopped hard, restarted');
if (!STOPPED_HARD) throw new Error('no fault "PostgreSQL stopped hard, restarted"');

let stack: MatrixStack;
before(async () => {
  stack = await startMatrixStack();
});
after(async () => {
  await stack?.stop();
});

describe('PostgreSQL killed at the end of each committing step', () => {
  for (const point of WRITE_POINTS) {
    it(`${point.name}`, { timeout: 600_000 }, async (t) => {
      const run = await stack.run(STOPPED_HARD, point);
      t.diagnostic(`killed at: ${run.statement.slice(0, 80).replace(/\s+/g, ' ')}`);
      t.diagnostic(`run settled ${(run.recoveryMs / 1000).toFixed(1)} s after PostgreSQL was back`);
    });
  }
});
