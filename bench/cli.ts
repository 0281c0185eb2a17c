/**
 * `npm run bench` (section 'cli'): how long the `durable-fetch` command takes as a whole process,
 * the way a user meets it: `--help`, `runs list` and `dlq list` against a migrated database with a
 * few rows, and `npx durable-fetch help`, next to `node -e 0` (the floor of any node process).
 * Each scenario runs once to warm the caches, then 5 times (3 with --quick), the scenarios
 * interleaved; medians of wall time and of CPU (user + system) are reported, never enforced.
 *
 * CPU is the child's own, as the shell's `times` builtin reports its children (clock-tick
 * resolution, 10 ms): each scenario runs as `sh -c '<command> >/dev/null; times'`, the same shell
 * wrapper for every row, node -e 0 included.
 *
 *   npx tsx bench/cli.ts [--quick]
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { buildCli } from '../scripts/build-cli.ts';
import { useTestDatabase } from '../test/helpers/database.ts';
import { createSource } from '../test/helpers/deps.ts';
import { insertDeadLetter, insertRun } from '../test/helpers/job-rows.ts';
import type { BenchOptions, BenchRow, BenchSection } from './report.ts';
import { standalone } from './standalone.ts';

interface Scenario {
  name: string;
  command: string[];
  goal?: string;
}

const BIN = path.join('bin', 'durable-fetch.js');
const SCENARIOS: Scenario[] = [
  { name: 'node -e 0', command: [process.execPath, '-e', '0'] },
  { name: 'durable-fetch --help', command: [process.execPath, BIN, '--help'], goal: '≤ 0.3 s' },
  { name: 'durable-fetch runs list', command: [process.execPath, BIN, 'runs', 'list'], goal: '≤ 0.6 s' },
  { name: 'durable-fetch dlq list', command: [process.execPath, BIN, 'dlq', 'list'], goal: '≤ 0.6 s' },
  // `help`, not `--help`: npx takes a --help after the command name as its own and prints npm's help.
  { name: 'npx durable-fetch help', command: ['npx', '--no-install', 'durable-fetch', 'help'] },
];

/** `sh -c 'cmd >/dev/null; times'`: wall seconds, and the children's user + system CPU seconds. */
function timed(command: string[], env: NodeJS.ProcessEnv): { wall: number; cpu: number; status: number } {
  const script = '"$@" >/dev/null 2>&1; s=$?; times; exit $s';
  const t0 = performance.now();
  const r = spawnSync('/bin/sh', ['-c', script, 'sh', ...command], {
    cwd: PROJECT_ROOT,
    env,
    encoding: 'utf8',
  });
  const wall = (performance.now() - t0) / 1000;
  // The second line of `times` is the children's: "0m0.120000s 0m0.020000s".
  const children = r.stdout.trim().split('\n')[1] ?? '';
  const cpu = [...children.matchAll(/(\d+)m([\d.]+)s/g)].reduce(
    (sum, m) => sum + Number(m[1]) * 60 + Number(m[2]),
    0,
  );
  return { wall, cpu, status: r.status ?? -1 };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2;
};
const round = (x: number) => Math.round(x * 1000) / 1000;

/** The 'cli' section: see the module comment. */
export async function benchCli(opts: BenchOptions): Promise<BenchSection> {
  const reps = opts.quick ? 3 : 5;
  await buildCli();
  const db = await useTestDatabase();
  try {
    await createSource(db.prisma, 'bench-cli', 'http://127.0.0.1:9/api');
    for (let day = 1; day <= 5; day++) {
      const date = `2026-11-0${day}`;
      if (day <= 2)
        await insertDeadLetter(db.prisma, { jobType: 'fetch-records', sourceId: 'bench-cli', date });
      else
        await insertRun(db.prisma, {
          jobType: 'fetch-records',
          sourceId: 'bench-cli',
          date,
          status: 'succeeded',
        });
    }
    const env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: process.env.DF_TEST_TEMPORAL_ADDRESS,
      LOG_LEVEL: 'warn',
      NO_COLOR: '1',
    };
    const samples = new Map(SCENARIOS.map((s) => [s.name, { wall: [] as number[], cpu: [] as number[] }]));
    for (let round_ = 0; round_ <= reps; round_++) {
      for (const s of SCENARIOS) {
        const r = timed(s.command, env);
        if (r.status !== 0) opts.say(`${s.name}: exit ${r.status}`);
        if (round_ === 0) continue; // warm-up
        samples.get(s.name)?.wall.push(r.wall);
        samples.get(s.name)?.cpu.push(r.cpu);
      }
      if (round_ > 0) opts.say(`round ${round_}/${reps} done`);
    }
    const medians = Object.fromEntries(
      [...samples].map(([name, x]) => [name, { wallS: round(median(x.wall)), cpuS: round(median(x.cpu)) }]),
    );
    const rows: BenchRow[] = SCENARIOS.filter((s) => s.name !== 'node -e 0').map((s) => ({
      scenario: `${s.name} (wall, median of ${reps})`,
      ours: medians[s.name]?.wallS ?? NaN,
      baseline: null,
      unit: 's',
      ratio: null,
      ...(s.goal ? { goal: s.goal } : {}),
    }));
    return {
      name: 'cli',
      rows,
      details: {
        repetitions: reps,
        warmUp: 1,
        medians,
        samples: Object.fromEntries(samples),
        rows: { runs: 5, deadLetters: 2 },
        measuredAs:
          "sh -c '<command> >/dev/null; times' (wall around the spawn; CPU = children user + system)",
      },
    };
  } finally {
    await db.drop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone(benchCli);
