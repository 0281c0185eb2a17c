/**
 * `npm test`'s runner: brings up the real services once per test run (test/helpers/services.ts),
 * then runs every `test/**\/*.test.ts` with node's test runner, whose summary CI reads.
 *
 * Usage: `npm test` (everything) or `npx tsx test/run.ts test/some.test.ts …`.
 */
import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { PROJECT_ROOT } from '../worker/config.ts';
import { isUserFacingError } from '../runtime/errors.ts';
import { buildCli } from '../scripts/build-cli.ts';
import { startTestServices, type TestServices } from './helpers/services.ts';

const say = (line: string) => console.log(`[test/run] ${line}`);

async function testFiles(args: string[]): Promise<string[]> {
  if (args.length > 0) return args;
  const entries = await readdir(path.join(PROJECT_ROOT, 'test'), { recursive: true });
  return entries
    .filter((f) => f.endsWith('.test.ts'))
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
    '--test-reporter=spec',
    ...files,
  ];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit', env, cwd: PROJECT_ROOT });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

let services: TestServices | undefined;

async function main(): Promise<number> {
  const started = Date.now();
  const files = await testFiles(process.argv.slice(2));
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

process.once('SIGINT', () => void (services?.stop() ?? Promise.resolve()).then(() => process.exit(130)));
try {
  process.exitCode = await main();
} catch (err) {
  console.error(isUserFacingError(err) ? `[test/run] ${err.message}` : err);
  process.exitCode = 1;
} finally {
  await services?.stop();
}
