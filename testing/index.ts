/**
 * The test kit of the package (`durable-fetch/testing`): runs an application's own job through
 * the real engine — a real Temporal (TEMPORAL_ADDRESS, or a dev server the kit starts), a fresh
 * PostgreSQL database on the server of DATABASE_URL with the engine's migrations and the
 * application's own, a real worker on a task queue of its own — against a partner the test
 * controls (`testPartner`).
 *
 *   const partner = await testPartner({ 'GET /shipments': () => ({ body: { data: [], next: null } }) });
 *   const kit = await jobTestKit({ jobs: [shipmentsJob], migrations: ['prisma/migrations'] });
 *   await kit.addSource({ id: 'acme', jobType: 'shipments', baseUrl: partner.url });
 *   const run = await kit.run('acme', '2026-11-20');   // waits for the run to end
 *   assert.equal(run.status, 'succeeded');
 *   await kit.close(); await partner.close();
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { pino } from 'pino';
import type { AnyJob } from '../activities/job-api/index.ts';
import { createActivityDeps } from '../activities/create-deps.ts';
import { createPrisma, type PrismaClient } from '../db/client.ts';
import { jobsWith } from '../jobs/registry.ts';
import { applyMigrations, dropDatabase, ensureDatabase, withDatabaseName } from '../prisma/migrator.ts';
import { loadConfig } from '../runtime/config.ts';
import { UserFacingError } from '../runtime/errors.ts';
import { addSource } from '../client/sources/add.ts';
import type { NewSource } from '../client/sources/check.ts';
import { type DurableFetchContext, startFetch } from '../client/start-fetch.ts';
import { ensureSearchAttributes } from '../worker/search-attributes.ts';
import { startDevServer, type DevServer } from '../worker/stack/temporal-dev-server.ts';
import { resolveTemporalCli } from '../worker/stack/temporal-cli.ts';
import { buildWorker } from '../worker/worker.ts';
import { failureType, runLeftovers } from './run-outcome.ts';

export { testPartner } from './partner.ts';
export type { RunLeftovers } from './run-outcome.ts';
import type { RunLeftovers } from './run-outcome.ts';
export type { PartnerReply, PartnerRequest, PartnerRoutes, TestPartner } from './partner.ts';

export interface JobTestKitOptions {
  /** The application's jobs, registered beside the built-in ones. */
  jobs: readonly AnyJob[];
  /** Secret references (`DF_SECRET_*`) and what they resolve to, for this kit's worker only. */
  secrets?: Record<string, string>;
  /**
   * A PostgreSQL URL whose server the kit creates a fresh database on (dropped by `close()`).
   * Default DATABASE_URL. The role must be allowed to create databases.
   */
  databaseUrl?: string;
  /** A Temporal frontend (`host:port`). Default TEMPORAL_ADDRESS; else a dev server is started. */
  temporalAddress?: string;
  /**
   * The namespace the kit's runs live in. Default: a fresh one per kit, registered by the kit
   * (workflow ids are business keys, unique per namespace: a kit on a long-lived server would
   * otherwise join a run an earlier test left there, whose rows are in another database).
   */
  namespace?: string;
  /**
   * The application's own migration folders (Prisma Migrate's layout), applied to `public` after
   * the engine's migrations (which go to schema `durable_fetch`), as `prisma migrate deploy` would.
   */
  migrations?: readonly string[];
}

/** A source as `durable-fetch sources add` takes it (checked by the same rules, its config by the job's schema). */
export type KitSource = NewSource;

/** What a run left: its row, its outbox events and its downstream ledger. */
export interface KitRun {
  workflowId: string;
  /** The run row's status (docs/runs.md). */
  status: string;
  /** The workflow's result, when it completed. */
  result: unknown;
  /** The failure's error type when the run failed (docs/runs.md), else undefined. */
  errorType: string | undefined;
  /** The run row as stored. */
  row: RunLeftovers['row'];
  events: RunLeftovers['events'];
  actions: RunLeftovers['actions'];
}

export interface JobKit {
  /** The kit's own database (engine tables in `durable_fetch`, the application's in `public`). */
  databaseUrl: string;
  /** The engine's client on that database (what `startFetch` and the client API take). */
  prisma: PrismaClient;
  temporal: Client;
  namespace: string;
  /** The worker's task queue. */
  taskQueue: string;
  /** The context the client API (`startFetch`, `getRun`, …) takes, on this kit's worker. */
  context: DurableFetchContext;
  addSource(source: KitSource): Promise<void>;
  /** Starts (or joins) the run of (source, date) and waits for it to end; never throws for a failed run. */
  run(sourceId: string, date: string): Promise<KitRun>;
  close(): Promise<void>;
}

let runtimeInstalled = false;

/** Starts a kit: its database, its Temporal (unless given), its worker. Close it when done. */
export async function jobTestKit(options: JobTestKitOptions): Promise<JobKit> {
  const baseUrl = options.databaseUrl ?? process.env.DATABASE_URL;
  if (!baseUrl) {
    throw new UserFacingError(
      'jobTestKit: no database: set DATABASE_URL (a PostgreSQL server where this role may create databases)',
      'INVALID_INPUT',
    );
  }
  // This kit's registry only: a second kit in the same process, with other jobs, is unaffected.
  const jobs = jobsWith(options.jobs);
  if (!runtimeInstalled) {
    runtimeInstalled = true;
    // Warnings only; must happen before the first native connection of the process.
    Runtime.install({ logger: new DefaultLogger('WARN') });
  }
  const databaseUrl = withDatabaseName(baseUrl, `df_kit_${randomUUID().replaceAll('-', '').slice(0, 16)}`);
  await ensureDatabase(databaseUrl);
  const cleanups: (() => Promise<unknown>)[] = [() => dropDatabase(databaseUrl)];
  // Last in, first out; once (a second close finds nothing left to do).
  const close = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  };
  try {
    await applyMigrations(databaseUrl);
    for (const dir of options.migrations ?? []) {
      await applyMigrations(databaseUrl, { migrationsDir: path.resolve(dir), schema: 'public' });
    }
    const prisma = createPrisma(databaseUrl, { max: 10 });
    cleanups.push(() => prisma.$disconnect());

    let address = options.temporalAddress ?? process.env.TEMPORAL_ADDRESS;
    if (!address) {
      const cli = await resolveTemporalCli({
        projectRoot: process.cwd(),
        cliPath: process.env.TEMPORAL_CLI_PATH,
      });
      const server: DevServer = await startDevServer({ cliPath: cli.path, port: 0, headless: true });
      cleanups.push(() => server.stop());
      address = server.address;
    }
    const connection = await Connection.connect({ address });
    cleanups.push(() => connection.close());
    const namespace = options.namespace ?? (await freshNamespace(connection));
    const temporal = new Client({ connection, namespace });
    await ensureSearchAttributes(connection, namespace);

    const taskQueue = `kit-${randomUUID()}`;
    const config = loadConfig({ ...process.env, DATABASE_URL: databaseUrl });
    const secrets = options.secrets ?? {};
    const base = createActivityDeps(config, prisma, pino({ level: 'silent' }), undefined, jobs);
    // The kit's secrets first, then the environment's DF_SECRET_* variables, as a worker reads them.
    const deps = { ...base, secret: (ref: string) => secrets[ref] ?? base.secret(ref), taskQueue };
    const native = await NativeConnection.connect({ address });
    cleanups.push(() => native.close());
    const worker = await buildWorker({ connection: native, namespace, taskQueue, deps });
    let workerFailure: unknown;
    const running = worker.run().catch((err: unknown) => {
      workerFailure = err;
    });
    cleanups.push(async () => {
      worker.shutdown();
      await running;
    });

    const context: DurableFetchContext = { temporal, prisma, taskQueue };
    return {
      databaseUrl,
      prisma,
      temporal,
      namespace,
      taskQueue,
      context,
      async addSource(source) {
        await addSource({ ...context, jobs }, source, { actor: 'test', reason: 'job test kit' });
      },
      async run(sourceId, date) {
        if (workerFailure) throw new Error('jobTestKit: the worker stopped', { cause: workerFailure });
        const started = await startFetch(context, { sourceId, date, requestedBy: 'test' });
        let result: unknown;
        let errorType: string | undefined;
        try {
          result = await started.handle.result();
        } catch (err) {
          errorType = failureType(err);
        }
        const left = await runLeftovers(prisma, sourceId, date);
        return { workflowId: started.workflowId, status: left.row.status, result, errorType, ...left };
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Registers a namespace of the kit's own (kept a day) and returns its name. */
async function freshNamespace(connection: Connection): Promise<string> {
  const namespace = `df-kit-${randomUUID().slice(0, 8)}`;
  await connection.workflowService.registerNamespace({
    namespace,
    workflowExecutionRetentionPeriod: msToTs(86_400_000),
  });
  return namespace;
}
