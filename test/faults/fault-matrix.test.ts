// R12c, R1, R5, R6 (issue 35 §2): the fault matrix. Each fault of a real dependency — the worker
// killed, stopped gracefully or frozen; the publisher killed; Temporal killed and restarted on its
// state; PostgreSQL stopped hard, its sessions terminated, refusing connections, silent; NATS
// JetStream killed and started again — landed at each point of a run where losing it would hurt
// (before the store transaction, inside it, at its COMMIT, after the commit before the step
// completes, between the partner call and recording its outcome, between a sink's acknowledgement
// and marking the event published); and the partner's own faults — a 5xx storm, a 429 storm with
// Retry-After, hanging, a late effect — on its pages, the non-idempotent submission and the
// sink's deliveries. Each cell runs several runs, each judged by the partner's own lists and the
// stream's (test/helpers/fault-matrix.ts, cells in fault-matrix-cells.ts). Prints the matrix; a
// full run (no DF_FAULT_MATRIX filter) writes it into docs/reliability.md.
//
// DF_FAULT_MATRIX=<text>[,<text>…] runs only the cells whose fault or point name contains one of them.
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as prettier from 'prettier';
import { PROJECT_ROOT } from '../../runtime/config.ts';
import {
  appliesTo,
  FAULTS,
  type Fault,
  type InjectionPoint,
  PARTNER_FAULTS,
  PARTNER_POINTS,
  POINTS,
} from '../helpers/fault-matrix-cells.ts';
import { type MatrixStack, startMatrixStack } from '../helpers/fault-matrix.ts';

const RUNS_PER_CELL = 2;
const filter = (process.env.DF_FAULT_MATRIX ?? '')
  .split(',')
  .map((s) => s.trim().toLowerCase())
  .filter(Boolean);

const ALL_FAULTS: readonly Fault[] = [...FAULTS, ...PARTNER_FAULTS];
const ALL_POINTS: readonly InjectionPoint[] = [...POINTS, ...PARTNER_POINTS];

const cells: [Fault, InjectionPoint][] = ALL_FAULTS.flatMap((fault) =>
  ALL_POINTS.filter((point) => appliesTo(fault, point))
    .filter(
      (point) =>
        filter.length === 0 ||
        filter.some((f) => fault.name.toLowerCase().includes(f) || point.name.toLowerCase().includes(f)),
    )
    .map((point): [Fault, InjectionPoint] => [fault, point]),
);

interface CellResult {
  fault: string;
  point: string;
  runs: number;
  passes: number;
  suppressed: number;
  maxRecoveryMs: number;
}
const results: CellResult[] = [];

let stack: MatrixStack;
before(async () => {
  stack = await startMatrixStack();
});
after(async () => {
  await stack?.stop();
  const table = matrixTable(results);
  console.log(`# fault matrix\n${table}`);
  if (filter.length === 0 && results.length === cells.length) await writeMatrix(table);
});

describe('the fault matrix', () => {
  for (const [fault, point] of cells) {
    it(`${fault.name} ${point.name}`, { timeout: RUNS_PER_CELL * 600_000 }, async (t) => {
      const result: CellResult = {
        fault: fault.name,
        point: point.name,
        runs: 0,
        passes: 0,
        suppressed: 0,
        maxRecoveryMs: 0,
      };
      results.push(result);
      for (let i = 0; i < RUNS_PER_CELL; i++) {
        result.runs++;
        const run = await stack.run(fault, point);
        result.passes++;
        result.suppressed += run.suppressed;
        result.maxRecoveryMs = Math.max(result.maxRecoveryMs, run.recoveryMs);
        t.diagnostic(
          `run ${i + 1}: settled ${(run.recoveryMs / 1000).toFixed(1)} s after the fault; ${run.suppressed} duplicate deliveries suppressed`,
        );
      }
    });
  }
});

function matrixTable(rows: readonly CellResult[]): string {
  const lines = [
    '| fault | injection point | runs | passed | duplicates suppressed | longest recovery |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.fault} | ${r.point} | ${r.runs} | ${r.passes} | ${r.suppressed} | ${(r.maxRecoveryMs / 1000).toFixed(1)} s |`,
    ),
  ];
  return lines.join('\n');
}

const START = '<!-- fault-matrix:start -->';
const END = '<!-- fault-matrix:end -->';

/** Replaces the matrix in docs/reliability.md (between its markers) with this run's, dated. */
async function writeMatrix(table: string): Promise<void> {
  const file = path.join(PROJECT_ROOT, 'docs', 'reliability.md');
  const doc = await readFile(file, 'utf8');
  const from = doc.indexOf(START);
  const to = doc.indexOf(END);
  if (from < 0 || to < from) throw new Error(`docs/reliability.md has no ${START} … ${END} block`);
  const load = os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ');
  const machine = `${os.cpus().length} cores, ${os.arch()}, load average ${load} (1 / 5 / 15 min) at the end`;
  const stamp = `Last full run: ${new Date().toISOString().slice(0, 10)}, ${machine}; ${RUNS_PER_CELL} runs per cell.`;
  const text = `${doc.slice(0, from + START.length)}\n\n${stamp}\n\n${table}\n\n${doc.slice(to)}`;
  // Formatted as `npm run lint` checks it (prettier aligns the table's columns).
  const options = (await prettier.resolveConfig(file)) ?? {};
  await writeFile(file, await prettier.format(text, { ...options, filepath: file }));
}
