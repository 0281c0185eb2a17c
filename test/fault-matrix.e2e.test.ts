// R12 (crash at each step), R12c (issue 35 §1, §2): the quick subset of the launch checks that
// `npm run test:faults` runs in full (test/faults/fault-matrix.test.ts, commit-kill.test.ts), one run
// per cell: the worker killed at a page's COMMIT; PostgreSQL killed before a page's COMMIT reached
// it, after it committed a page unheard, and after it committed a partner call's outcome unheard;
// Temporal killed and restarted between a non-idempotent partner call and recording its outcome;
// the publisher killed between a sink's acknowledgement and marking the event published; NATS
// JetStream killed while the run's completion event is on its way there; the partner applying a
// submission the worker gave up on (a late effect). Each run is judged by the partner's own lists
// and the stream's: its records once, each event applied or held once, one submission.
import { after, before, describe, it } from 'node:test';
import {
  FAULTS,
  type Fault,
  type InjectionPoint,
  PARTNER_FAULTS,
  PARTNER_POINTS,
  POINTS,
  WRITE_POINTS,
} from './helpers/fault-matrix-cells.ts';
import { type MatrixStack, startMatrixStack } from './helpers/fault-matrix.ts';

const STOPPED = 'PostgreSQL stopped hard, restarted';
const CELLS: readonly [string, string][] = [
  ['worker SIGKILL', 'at COMMIT'],
  [STOPPED, "a page's store, before its COMMIT reached the server"],
  [STOPPED, "a page's store, after the server committed it"],
  [STOPPED, "recording the call's outcome, after the server committed it"],
  ['Temporal SIGKILL, restarted on its state', 'between the partner call and recording its outcome'],
  ['publisher SIGKILL', "between a sink's acknowledgement and marking published"],
  ['NATS JetStream killed, started 10 s later', "between a sink's acknowledgement and marking published"],
  ['partner late effect', 'the non-idempotent submission'],
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
    const fault = [...FAULTS, ...PARTNER_FAULTS].find((f: Fault) => f.name === faultName);
    const point = [...POINTS, ...WRITE_POINTS, ...PARTNER_POINTS].find(
      (p: InjectionPoint) => p.name === pointName,
    );
    if (!fault || !point) throw new Error(`no cell ${faultName} × ${pointName}`);
    it(`${fault.name}: ${point.name}`, { timeout: 600_000 }, async (t) => {
      const run = await stack.run(fault, point);
      t.diagnostic(
        `settled ${(run.recoveryMs / 1000).toFixed(1)} s after the fault; ${run.suppressed} duplicate deliveries suppressed`,
      );
    });
  }
});
