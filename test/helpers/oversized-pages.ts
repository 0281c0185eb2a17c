/**
 * A job whose partner sends more records than the engine asks for: the demo partner's records API
 * asked for a page size of the source's own (`config.partnerLimit`), whatever `ctx.limit` says,
 * as a partner with a fixed page size does. Run as a script, a worker process that registers it
 * beside the deployment's jobs (for tests that SIGKILL a worker at a crash point):
 *
 *   DATABASE_URL=… TEMPORAL_ADDRESS=… OVERSIZE_TASK_QUEUE=… [OVERSIZE_CRASH_POINT=before-commit]
 *   [OVERSIZE_PARTNER_PAGE_LIMIT=50] node --import tsx test/helpers/oversized-pages.ts
 */
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { NativeConnection } from '@temporalio/worker';
import { z } from 'zod';
import { isCrashPoint } from '../../runtime/crash-points.ts';
import { defineJob } from '../../activities/job-api/index.ts';
import { createJobRegistry } from '../../activities/job-api/registry.ts';
import { fetchedRecordsReconcile, storeFetchedRecords } from '../../jobs/fetched-records.ts';
import { fetchRecordsPage, type PartnerRecord } from '../../jobs/fetch-records/records-api.ts';
import { jobs } from '../../jobs/index.ts';
import { createPrisma } from '../../db/client.ts';
import { buildWorker } from '../../worker/worker.ts';
import { testDeps } from './deps.ts';

export const OVERSIZE_JOB_TYPE = 'oversize-test';

/** The demo partner's records, asked for `partnerLimit` at a time whatever the engine asks. */
export const oversizeJob = defineJob<{ partnerLimit: number }, PartnerRecord>({
  type: OVERSIZE_JOB_TYPE,
  description: 'the demo records API with a page size of its own (tests)',
  config: z.object({ partnerLimit: z.int().min(1).max(500) }),
  recordId: (record) => record.id,
  fetchPage: (ctx) => fetchRecordsPage({ ...ctx, limit: ctx.source.config.partnerLimit }),
  storePage: (_tx, records, ctx) =>
    storeFetchedRecords(
      ctx.sql,
      records.map((r) => ({ external_id: r.id, data: r.record })),
      ctx,
    ),
  reconcile: fetchedRecordsReconcile,
});

/** The deployment's jobs and this one. */
export const jobsWithOversize = [...jobs, oversizeJob];

/** The worker process: the test deps, the jobs above, a crash point if one is armed. */
async function main(): Promise<void> {
  const need = (name: string): string => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set`);
    return value;
  };
  const taskQueue = need('OVERSIZE_TASK_QUEUE');
  const crash = process.env.OVERSIZE_CRASH_POINT;
  if (crash !== undefined && !isCrashPoint(crash)) throw new Error(`not a crash point: ${crash}`);
  const prisma = createPrisma(need('DATABASE_URL'));
  const deps = testDeps(prisma, {
    jobs: createJobRegistry(jobsWithOversize),
    partnerPageLimit: Number(process.env.OVERSIZE_PARTNER_PAGE_LIMIT ?? 50),
    taskQueue,
    ...(crash === undefined ? {} : { crashPoint: crash }),
  });
  const bundlePath = process.env.DURABLE_FETCH_WORKFLOW_BUNDLE;
  const connection = await NativeConnection.connect({ address: need('TEMPORAL_ADDRESS') });
  const worker = await buildWorker({
    connection,
    namespace: 'default',
    taskQueue,
    deps,
    ...(bundlePath ? { workflowBundle: { code: await readFile(bundlePath, 'utf8') } } : {}),
  });
  process.once('SIGTERM', () => worker.shutdown());
  console.log(`oversize worker polling task queue ${taskQueue}`);
  try {
    await worker.run();
  } finally {
    await connection.close();
    await prisma.$disconnect();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
