/**
 * `npm test`'s runner: brings up the real services once per test run, then runs every
 * `test/**\/*.test.ts` with node's test runner (whose summary CI reads).
 *
 * - Temporal: one `temporal server start-dev` (in memory, headless, free port) from the pinned CLI.
 * - PostgreSQL: the server of DATABASE_URL, else 127.0.0.1:5432 (CI), else an embedded one; one
 *   migrated template database, cloned per test file by test/helpers/database.ts.
 *
 * Usage: `npm test` (everything) or `npx tsx test/run.ts test/some.test.ts …`.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { withDatabaseName } from '../prisma/migrator.ts';
import { PROJECT_ROOT } from '../worker/config.ts';
import { isUserFacingError } from '../worker/errors.ts';
import { startEmbeddedPostgres } from '../worker/postgres.ts';
import { resolveTemporalCli } from '../worker/temporal-cli.ts';
import { startDevServer } from '../worker/temporal-dev-server.ts';
import { createTemplateDatabase, dropDatabase } from './helpers/database.ts';

const say = (line: string) => console.log(`[test/run] ${line}`);
const cleanups: (() => Promise<unknown>)[] = [];

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function postgresAdminUrl(): Promise<string> {
  if (process.env.DATABASE_URL) return withDatabaseName(process.env.DATABASE_URL, 'postgres');
  const local = 'postgres://postgres@127.0.0.1:5432/postgres';
  if (await reachable(local)) return local;
  say('no PostgreSQL at 127.0.0.1:5432 and no DATABASE_URL: starting an embedded one');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'df-test-pg-'));
  const server = await startEmbeddedPostgres({ dataDir: dir, port: 0, user: 'postgres', password: 'postgres' });
  cleanups.push(async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });
  return server.adminUrl;
}

async function testFiles(args: string[]): Promise<string[]> {
  if (args.length > 0) return args;
  const dir = path.join(PROJECT_ROOT, 'test');
  const entries = await readdir(dir, { recursive: true });
  return entries
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
    .map((f) => path.join('test', f));
}

function runNodeTest(files: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const concurrency = process.env.DF_TEST_CONCURRENCY ?? '2';
  const args = ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit', env, cwd: PROJECT_ROOT });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main(): Promise<number> {
  const started = Date.now();
  const files = await testFiles(process.argv.slice(2));
  const [cli, adminUrl] = await Promise.all([
    resolveTemporalCli({ projectRoot: PROJECT_ROOT, cliPath: process.env.TEMPORAL_CLI_PATH, log: say }),
    postgresAdminUrl(),
  ]);
  const [server, templateUrl] = await Promise.all([
    startDevServer({ cliPath: cli.path, port: 0, headless: true }),
    createTemplateDatabase(adminUrl, `df_template_${process.pid}`),
  ]);
  cleanups.push(() => server.stop());
  const template = new URL(templateUrl).pathname.slice(1);
  cleanups.push(() => dropDatabase(adminUrl, template));
  say(`Temporal ${server.address} (${cli.source}), template database ${template}; ${files.length} test files`);

  const code = await runNodeTest(files, {
    ...process.env,
    DF_TEST_TEMPORAL_ADDRESS: server.address,
    DF_TEST_PG_ADMIN_URL: adminUrl,
    DF_TEST_TEMPLATE_DB: template,
    DF_TEST_TEMPORAL_CLI: cli.path,
  });
  say(`finished in ${((Date.now() - started) / 1000).toFixed(1)} s with exit code ${code}`);
  return code;
}

async function cleanup(): Promise<void> {
  for (const fn of cleanups.reverse()) await fn().catch((err: unknown) => console.error('[test/run] cleanup:', err));
}

process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
try {
  process.exitCode = await main();
} catch (err) {
  console.error(isUserFacingError(err) ? `[test/run] ${err.message}` : err);
  process.exitCode = 1;
} finally {
  await cleanup();
}
