/**
 * `npm test`'s runner: brings up the real services once per test run (test/helpers/services.ts),
 * then runs every `test/**\/*.test.ts` with node's test runner, whose summary CI reads.
 *
 * Usage: `npm test` (every file under test/ but test/faults/), `npm run test:faults` (the launch
 * checks: the long fault, alert and restore suites under test/faults/), or
 * `npx tsx test/run.ts [--load N] [--faults] [test/some.test.ts …]`.
 * `--load N` keeps N busy processes running beside the tests (`npm run test:load`: 2), the way a
 * laptop or a shared CI runner doing other work runs them: the suite must pass that way too.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_ROOT } from '../runtime/config.ts';
import { isUserFacingError } from '../runtime/errors.ts';
import { buildCli } from '../scripts/build-cli.ts';
import { startTestServices, type TestServices } from './helpers/services.ts';

const say = (line: string) => console.log(`[test/run] ${line}`);

/** The folder of the launch checks: minutes per file, run by `npm run test:faults`, not `npm test`. */
const FAULTS = 'faults';

async function testFiles(args: string[], faults: boolean): Promise<string[]> {
  if (args.length > 0) return args;
  const entries = await readdir(path.join(PROJECT_ROOT, 'test'), { recursive: true });
  return entries
    .filter((f) => f.endsWith('.test.ts') && (f.split(path.sep)[0] === FAULTS) === faults)
    .sort()
    .map((f) => path.join('test', f));
}

function runNodeTest(files: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const concurrency = process.env.DF_TEST_CONCURRENCY ?? '2';
  const args = [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${concurrency}`,
    // A file whose tests are done ends even if something it opened still holds its event loop (a
    // server left open by an `after` hook that failed): the failure is reported, and the run goes
    // on instead of waiting for that file for ever.
    '--test-force-exit',
    '--test-reporter=spec',
    ...files,
  ];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit', env, cwd: PROJECT_ROOT });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** A busy process: spins in 50 ms slices, and exits when its parent goes (its stdin ends). */
const SPIN = `
process.stdin.on('end', () => process.exit(0)).resume();
const spin = () => { const end = Date.now() + 50; while (Date.now() < end); setImmediate(spin); };
spin();`;

/**
 * Starts `count` processes that each keep one core busy until `stop` (or this process) ends them:
 * plain spin loops, so the load needs nothing installed and ends with the run.
 */
function startLoad(count: number): { stop: () => void } {
  const spinners: ChildProcess[] = [];
  for (let i = 0; i < count; i++) {
    const spinner = spawn(process.execPath, ['-e', SPIN], { stdio: ['pipe', 'ignore', 'inherit'] });
    spinners.push(spinner);
  }
  return { stop: () => spinners.forEach((s) => s.kill('SIGKILL')) };
}

let services: TestServices | undefined;
let load: { stop: () => void } | undefined;

function options() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { load: { type: 'string', default: '0' }, faults: { type: 'boolean', default: false } },
  });
  const busy = Number(values.load);
  if (!Number.isInteger(busy) || busy < 0 || busy > 64) {
    throw new Error(`--load takes a whole number of busy processes (0..64), not '${values.load}'`);
  }
  return { busy, faults: values.faults, files: positionals };
}

async function main(): Promise<number> {
  const started = Date.now();
  const { busy, faults, files: named } = options();
  const files = await testFiles(named, faults);
  // Given no files, node's test runner would search the whole tree (node_modules included).
  if (files.length === 0) throw new Error(`no test files under test/${faults ? FAULTS : ''}`);
  if (busy > 0) {
    load = startLoad(busy);
    say(`load: ${busy} busy processes beside the tests`);
  }
  // Once, before any test spawns the CLI: every spawned command then runs this build, and none
  // of them finds it stale and rebuilds while others start.
  say(`CLI compiled: ${path.relative(PROJECT_ROOT, await buildCli({ projectRoot: PROJECT_ROOT }))}`);
  services = await startTestServices(say);
  say(
    `Temporal ${services.temporalAddress} (CLI from ${services.temporalCliSource}), ` +
      `template database ${services.template}; ${files.length} test files`,
  );
  const code = await runNodeTest(files, { ...process.env, ...services.env });
  say(`finished in ${((Date.now() - started) / 1000).toFixed(1)} s with exit code ${code}`);
  return code;
}

process.once('SIGINT', () => {
  load?.stop();
  void (services?.stop() ?? Promise.resolve()).then(() => process.exit(130));
});
try {
  process.exitCode = await main();
} catch (err) {
  console.error(isUserFacingError(err) ? `[test/run] ${err.message}` : err);
  process.exitCode = 1;
} finally {
  load?.stop();
  await services?.stop();
}
