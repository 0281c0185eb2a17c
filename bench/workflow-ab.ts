/**
 * A developer's A/B of workflow code: the workflows of a git revision (A) against the working
 * tree's (B) — the activities and the worker around them are the working tree's on both sides —
 * each in its own `durable-fetch worker` on one dev server and one database, in
 * alternating phases of runs started at once (ABBA…). Prints each phase and the medians of
 * throughput and CPU per run. A change to the workflow code is kept when it pays here: the
 * machine's speed drifts by a fifth within minutes, so phases of one `npm run bench` apart say
 * little about a few percent. Not part of `npm run bench`.
 *
 *   npx tsx bench/workflow-ab.ts --rev HEAD [--step] [--runs 150] [--pairs 2]
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { startPartner } from '../partner/server.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createSource } from '../test/helpers/deps.ts';
import { startTestServices } from '../test/helpers/services.ts';
import { testClient } from '../test/helpers/temporal.ts';
import { bundleWorkflowCopy } from '../test/helpers/workflow-variant.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { measurePhase, type PhaseResult, settleAll, startRun, startWorkers } from './phases.ts';
import { median, round } from './report.ts';

const RECORDS = 200;
const PAGE_SIZE = 100;

interface Options {
  rev: string;
  step: boolean;
  runs: number;
  pairs: number;
}

const positive = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number ≥ 1');
  return n;
};

function parseArgs(argv: string[]): Options {
  return new Command('workflow-ab')
    .description(
      "Compare the workflow code of a git revision (A) with the working tree's (B): one worker each, " +
        'alternating phases of runs of 2 pages × 100 records, medians of runs/s and CPU per run.',
    )
    .option('--rev <revision>', 'the git revision whose workflows/ is A', 'HEAD')
    .option('--step', 'runs with the downstream step (submit and confirm)', false)
    .option('--runs <n>', 'runs started at once per phase', positive, 150)
    .option('--pairs <n>', 'ABBA pairs of phases (each side runs 2 × n phases)', positive, 2)
    .parse(argv)
    .opts<Options>();
}

/**
 * Bundles `rev`'s workflows/ (and contract/, which workflow code imports since it was split out)
 * the way the worker does, into a file a worker loads.
 */
async function bundleOf(rev: string, dir: string): Promise<string> {
  const tops = execFileSync('git', ['ls-tree', '--name-only', rev], { cwd: PROJECT_ROOT, encoding: 'utf8' });
  const folders = ['workflows', 'contract'].filter((f) => tops.split('\n').includes(f));
  const tar = execFileSync('git', ['archive', rev, ...folders], { cwd: PROJECT_ROOT });
  execFileSync('tar', ['-x', '-C', dir], { input: tar });
  return (await bundleWorkflowCopy(dir)).bundlePath;
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv);
  const say = (line: string) => console.log(`[workflow-ab] ${line}`);
  // Undone in reverse order, whatever got started before a failure.
  const stops: (() => Promise<unknown>)[] = [];
  try {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'df-workflow-ab-'));
    stops.push(() => rm(dir, { recursive: true, force: true }));
    const services = await startTestServices(say);
    stops.push(() => services.stop());
    Object.assign(process.env, services.env);
    const db = await useTestDatabase();
    stops.push(() => db.drop());
    const partner = await startPartner({ port: 0, recordCount: () => RECORDS, maxPageSize: PAGE_SIZE });
    stops.push(() => partner.close());
    const client = await testClient();
    stops.push(() => client.connection.close());
    say(`bundling ${opts.rev}'s workflows (A)…`);
    const bundleA = await bundleOf(opts.rev, dir);
    // B: the working tree's workflows, bundled once for the run by the test services. Each side
    // has an idle bare worker beside it (startWorkers starts both): a few polls, no runs.
    const A = await startWorkers(db.url, { DURABLE_FETCH_WORKFLOW_BUNDLE: bundleA });
    stops.push(() => A.stop());
    const B = await startWorkers(db.url);
    stops.push(() => B.stop());
    const workers = { A, B };
    await createSource(db.prisma, 'ab', partner.url, { pageSize: PAGE_SIZE, submitSummary: opts.step });
    const ctxOf = (side: 'A' | 'B') => ({
      temporal: client,
      prisma: db.prisma,
      taskQueue: workers[side].oursQueue,
    });
    say('warming up both workers…');
    for (const side of ['A', 'B'] as const) {
      await settleAll(
        await Promise.all(Array.from({ length: 20 }, () => startRun(ctxOf(side), 'ab', RECORDS))),
      );
    }
    const phases: Record<'A' | 'B', PhaseResult[]> = { A: [], B: [] };
    for (let pair = 0; pair < opts.pairs; pair++) {
      for (const side of ['A', 'B', 'B', 'A'] as const) {
        const w = workers[side];
        const result = await measurePhase(w.ours, w.serverPid, opts.runs, () =>
          startRun(ctxOf(side), 'ab', RECORDS),
        );
        phases[side].push(result);
        say(`${side}: ${JSON.stringify(result)}`);
      }
    }
    const fields = [
      'runsPerSecond',
      'workerCpuMsPerRun',
      'serverCpuMsPerRun',
      'postgresCpuMsPerRun',
      'machineCpuMsPerRun',
    ] as const;
    console.table(
      fields.map((field) => {
        const a = round(median(phases.A.map((p) => p[field])));
        const b = round(median(phases.B.map((p) => p[field])));
        return {
          median: field,
          [`A (${opts.rev})`]: a,
          'B (working tree)': b,
          'B / A': round(b / a, 3),
        };
      }),
    );
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
}

await main();
