/**
 * The real services a test run (or a benchmark) needs, started once: a Temporal dev server (in
 * memory, free ports, with its Web UI) from the pinned CLI, and a migrated template database on the
 * PostgreSQL of DATABASE_URL, else 127.0.0.1:5432, else an embedded one.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import pg from 'pg';
import { withDatabaseName } from '../../prisma/migrator.ts';
import { PROJECT_ROOT } from '../../runtime/config.ts';
import { startEmbeddedPostgres } from '../../worker/stack/postgres.ts';
import { isPidAlive } from '../../runtime/process-utils.ts';
import { resolveTemporalCli } from '../../worker/stack/temporal-cli.ts';
import { startDevServer } from '../../worker/stack/temporal-dev-server.ts';
import { WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from '../../worker/worker.ts';
import { createTemplateDatabase, dropDatabase } from './database.ts';

export interface TestServices {
  temporalAddress: string;
  temporalCli: string;
  temporalCliSource: string;
  adminUrl: string;
  template: string;
  /** The variables test helpers read (DF_TEST_*). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

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

/**
 * Drops test databases (`df_template_<pid>`, `df_test_<pid>_…`) whose process is gone: a killed
 * test run cannot clean up after itself, and CI machines keep their PostgreSQL between runs.
 */
async function sweepStaleDatabases(adminUrl: string, log: (line: string) => void): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  let names: string[];
  try {
    const { rows } = await client.query<{ datname: string }>(
      String.raw`SELECT datname FROM pg_database WHERE datname ~ '^df_(template|test)_[0-9]+(_|$)'`,
    );
    names = rows.map((r) => r.datname);
  } finally {
    await client.end();
  }
  const stale = names.filter((name) => !isPidAlive(Number(/^df_(?:template|test)_(\d+)/.exec(name)?.[1])));
  for (const name of stale) await dropDatabase(adminUrl, name);
  if (stale.length > 0) log(`dropped ${stale.length} database(s) left by earlier, killed test runs`);
}

/** Starts both services; on failure stops whatever had started. */
export async function startTestServices(log: (line: string) => void): Promise<TestServices> {
  const stops: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const fn of stops.reverse())
      await fn().catch((err: unknown) => log(`cleanup failed: ${String(err)}`));
  };
  let bundling: Promise<string> | undefined;
  try {
    const postgresAdminUrl = async (): Promise<string> => {
      if (process.env.DATABASE_URL) return withDatabaseName(process.env.DATABASE_URL, 'postgres');
      const local = 'postgres://postgres@127.0.0.1:5432/postgres';
      if (await reachable(local)) return local;
      log('no PostgreSQL at 127.0.0.1:5432 and no DATABASE_URL: starting an embedded one');
      const dir = await mkdtemp(path.join(os.tmpdir(), 'df-test-pg-'));
      const server = await startEmbeddedPostgres({
        dataDir: dir,
        port: 0,
        user: 'postgres',
        password: 'postgres',
      });
      stops.push(async () => {
        await server.stop();
        await rm(dir, { recursive: true, force: true });
      });
      return server.adminUrl;
    };
    // Alongside the services: bundling is CPU, they are mostly waiting.
    bundling = writeWorkflowBundle(stops);
    bundling.catch(() => {}); // awaited below; this only keeps an early failure from being unhandled
    const [cli, adminUrl] = await Promise.all([
      resolveTemporalCli({ projectRoot: PROJECT_ROOT, cliPath: process.env.TEMPORAL_CLI_PATH, log }),
      postgresAdminUrl(),
    ]);
    await sweepStaleDatabases(adminUrl, log);
    const template = `df_template_${process.pid}`;
    const [server] = await Promise.all([
      // With its Web UI: the browser test opens it.
      startDevServer({ cliPath: cli.path, port: 0 }).then((s) => {
        stops.push(() => s.stop());
        return s;
      }),
      createTemplateDatabase(adminUrl, template).then(() =>
        stops.push(() => dropDatabase(adminUrl, template)),
      ),
    ]);
    const bundlePath = await bundling;
    return {
      temporalAddress: server.address,
      temporalCli: cli.path,
      temporalCliSource: cli.source,
      adminUrl,
      template,
      env: {
        DF_TEST_TEMPORAL_ADDRESS: server.address,
        DF_TEST_PG_ADMIN_URL: adminUrl,
        DF_TEST_TEMPLATE_DB: template,
        DF_TEST_TEMPORAL_CLI: cli.path,
        DF_TEST_WORKFLOW_BUNDLE: bundlePath,
        ...(server.uiUrl ? { DF_TEST_TEMPORAL_UI_URL: server.uiUrl } : {}),
      },
      stop,
    };
  } catch (err) {
    // The bundling may still run: it must settle before stop() removes its directory, or its
    // write fails unobserved and ends the process with that error instead of this one.
    await bundling?.catch(() => {});
    await stop();
    throw err;
  }
}

/**
 * Bundles the workflows once per test run, the way the worker would at start, into a file every
 * test worker (in-process or spawned, as DURABLE_FETCH_WORKFLOW_BUNDLE) loads instead of bundling
 * again: each bundling costs seconds of CPU, and the suite starts dozens of workers.
 */
async function writeWorkflowBundle(stops: (() => Promise<unknown>)[]): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'df-test-bundle-'));
  stops.push(() => rm(dir, { recursive: true, force: true }));
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    logger: new DefaultLogger('WARN'),
  });
  const file = path.join(dir, 'workflow-bundle.js');
  await writeFile(file, code);
  return file;
}
