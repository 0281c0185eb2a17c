// R12 (crash at each step), R12c (issue 35 §1, §2): the quick subset of the launch checks that
// `npm run test:faults` runs in full (test/faults/fault-matrix.test.ts, commit-kill.test.ts), one run
// per cell: the worker killed at a page's COMMIT; PostgreSQL killed before a page's COMMIT reached
// it, after it committed a page unheard, and after it committed a partner call's outcome unheard;
// Temporal killed and restarted between a non-idempotent partner call and recording its outcome;
// the publisher killed between a sink's acknowledgement and marking the event published. Each run
// is judged by the partner's own lists: its records once, each event applied once, one submission.
import { after, before, describe, it } from 'node:test';
import { FAULTS, type MatrixStack, POINTS, startMatrixStack, WRITE_POINTS } from './helpers/fault-matrix.ts';

const STOPPED = 'PostgreSQL stopped hard, restarted';
const CELLS: readonly [string, string][] = [
  ['worker SIGKILL', 'at COMMIT'],
  [STOPPED, "a page's store, before its COMMIT reached the server"],
  [STOPPED, "a page's store, after the server committed it"],
  [STOPPED, "recording the call's outcome, after the server committed it"],
  ['Temporal SIGKILL, restarted on its state', 'between the partner call and recording its outcome'],
  ['publisher SIGKILL', "between a sink's acknowledgement and marking published"],
];

let stack: MatrixStack;
before(async () => {
  stack = await startMatrixStack();
});
after(async () => {
  await stack?.stop();
});

describe('the launch checks, quick', () => {
  for (const [faultName, pointName] of CELLS) {
    const fault = FAULTS.find((f) => f.name === faultName);
    const point = [...POINTS, ...WRITE_POINTS].find((p) => p.name === pointName);
    if (!fault || !point) throw new Error(`no cell ${faultName} × ${pointName}`);
    it(`${fault.name}: ${point.name}`, { timeout: 600_000 }, async (t) => {
      const run = await stack.run(fault, point);
      t.diagnostic(
        `settled ${(run.recoveryMs / 1000).toFixed(1)} s after the fault; ${run.suppressed} duplicate deliveries suppressed`,
      );
    });
  }
});
