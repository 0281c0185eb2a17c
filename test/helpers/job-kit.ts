/**
 * The job test kit: runs a job's pages through the real engine — the run's shared Temporal dev
 * server, a fresh migrated PostgreSQL database, a real worker on its own task queue — against a
 * partner the test controls. A team tests its own job in a few lines (docs/jobs.md):
 *
 *   const kit = await jobTestKit({ jobs: [myJob], secrets: { DF_SECRET_ACME: 'tok' } });
 *   await kit.addSource({ id: 'acme-kit', job: 'acme', baseUrl: partner.url, credentialsRef: 'DF_SECRET_ACME' });
 *   const run = await kit.run('acme-kit', '2026-11-20');   // waits for the run to end
 *   assert.equal(run.status, 'succeeded');
 *   await kit.close();
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { AnyJob } from '../../activities/job-api/index.ts';
import { createJobRegistry } from '../../activities/job-api/registry.ts';
import type { FetchRun, Prisma, PrismaClient } from '../../prisma/generated/client.ts';
import { startFetch } from '../../client/start-fetch.ts';
import type { fetchRecordsWorkflow } from '../../workflows/fetch-records.ts';
import type { ActivityDeps } from '../../activities/index.ts';
import { useTestDatabase, type TestDatabase } from './database.ts';
import { createSource, testDeps } from './deps.ts';
import { testClient, testWorker, type TestWorker } from './temporal.ts';
import { failureType, runLeftovers, type RunLeftovers } from '../../testing/run-outcome.ts';

export interface JobKitOptions {
  /** The jobs the worker registers (default: the deployment's, jobs/index.ts). */
  jobs?: readonly AnyJob[];
  /** `DF_SECRET_*` references and the secrets they resolve to, for this kit's worker only. */
  secrets?: Record<string, string>;
  /** Anything else of the activities' dependencies (e.g. `partnerPageLimit`, `crashPoint`), or what makes it from the kit's database. */
  deps?: Partial<ActivityDeps> | ((prisma: PrismaClient) => Partial<ActivityDeps>);
}

export interface KitSource {
  id: string;
  /** The job type (`source.job_type`). */
  job: string;
  baseUrl: string;
  /** The job's config, stored as given (the engine validates it at run time). */
  config?: Prisma.InputJsonValue;
  credentialsRef?: string;
  pageSize?: number;
  /** Make the job's downstream action at the end of each run. */
  downstream?: boolean;
  /** The partner retry preset (default the table's). */
  retryPolicy?: string;
}

/** What a run left: its row, its outbox events and its compensation ledger. */
export interface KitRun extends RunLeftovers {
  status: FetchRun['status'];
  result: unknown;
  /** The failure's error type (contract/error-types.ts) when the run failed (else undefined). */
  errorType: string | undefined;
}

export interface JobKit {
  db: TestDatabase;
  prisma: PrismaClient;
  client: Client;
  worker: TestWorker;
  addSource(source: KitSource): Promise<void>;
  /** Starts (or joins) the run of (source, date) and waits for it to end; never throws for a failed run. */
  run(sourceId: string, date: string): Promise<KitRun>;
  /** Starts the run and hands its handle to `during` while the worker runs (cancel, signal, inspect). */
  runWith<T>(
    sourceId: string,
    date: string,
    during: (h: WorkflowHandle<typeof fetchRecordsWorkflow>) => Promise<T>,
  ): Promise<T>;
  close(): Promise<void>;
}

export async function jobTestKit(options: JobKitOptions = {}): Promise<JobKit> {
  const db = await useTestDatabase();
  const client = await testClient();
  const secrets = options.secrets ?? {};
  const deps = testDeps(db.prisma, {
    ...(options.jobs ? { jobs: createJobRegistry(options.jobs) } : {}),
    secret: (ref) => secrets[ref],
    ...(typeof options.deps === 'function' ? options.deps(db.prisma) : options.deps),
  });
  const worker = await testWorker(deps);
  const ctx = { temporal: client, prisma: db.prisma, taskQueue: worker.taskQueue };

  async function runWith<T>(
    sourceId: string,
    date: string,
    during: (h: WorkflowHandle<typeof fetchRecordsWorkflow>) => Promise<T>,
  ): Promise<T> {
    return worker.run(async () => {
      const started = await startFetch(ctx, { sourceId, date, requestedBy: 'test' });
      return during(started.handle);
    });
  }

  return {
    db,
    prisma: db.prisma,
    client,
    worker,
    async addSource(s) {
      await createSource(db.prisma, s.id, s.baseUrl, {
        jobType: s.job,
        ...(s.config === undefined ? {} : { config: s.config }),
        ...(s.credentialsRef === undefined ? {} : { credentialsRef: s.credentialsRef }),
        ...(s.pageSize === undefined ? {} : { pageSize: s.pageSize }),
        ...(s.retryPolicy === undefined ? {} : { retryPolicy: s.retryPolicy }),
        submitSummary: s.downstream ?? false,
      });
    },
    runWith,
    async run(sourceId, date) {
      const { result, errorType } = await runWith(sourceId, date, async (handle) => {
        try {
          return { result: await handle.result(), errorType: undefined };
        } catch (err) {
          return { result: undefined, errorType: failureType(err) };
        }
      });
      const left = await runLeftovers(db.prisma, sourceId, date);
      return { status: left.row.status, result, errorType, ...left };
    },
    async close() {
      await client.connection.close();
      await db.drop();
    },
  };
}
