// The worker registers the jobs of jobs/index.ts and says, at start, which enabled sources no job
// of it runs (their runs would fail UNKNOWN_JOB_TYPE): a real `durable-fetch worker` process.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { useTestDatabase, type TestDatabase } from './helpers/database.ts';
import { createSource } from './helpers/deps.ts';
import { literal, registeredJobTypes } from './helpers/job-types.ts';
import { spawnWorker } from './helpers/process.ts';
import { temporalAddress } from './helpers/temporal.ts';

let db: TestDatabase;

before(async () => {
  db = await useTestDatabase();
});

after(async () => {
  await db?.drop();
});

describe('worker jobs', () => {
  it('names the jobs it runs and, in one line each, the enabled sources whose job it does not run', async () => {
    await createSource(db.prisma, 'wj-known', 'http://127.0.0.1:9/', { jobType: 'exchange-rates' });
    await createSource(db.prisma, 'wj-orphan', 'http://127.0.0.1:9/', { jobType: 'acme-orders' });
    await createSource(db.prisma, 'wj-off', 'http://127.0.0.1:9/', {
      jobType: 'acme-orders',
      enabled: false,
    });
    // Every job of jobs/index.ts, the built-in ones among them: the worker names them all.
    const jobs = literal(registeredJobTypes().join(', '));
    const worker = spawnWorker({
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      DURABLE_FETCH_TASK_QUEUE: `test-wj-${randomUUID()}`,
      DURABLE_FETCH_METRICS_PORT: '0',
    });
    try {
      await worker.waitFor(new RegExp(`worker polling task queue '[^']+' with jobs ${jobs} `), 60_000);
      const lines = worker.output().split('\n');
      const orphans = lines.filter((l) => l.includes('which this worker does not register'));
      assert.equal(orphans.length, 1, worker.output());
      assert.match(
        orphans[0] ?? '',
        new RegExp(
          `source 'wj-orphan' runs job 'acme-orders', which this worker does not register \\(it runs: ${jobs}\\)`,
        ),
      );
      assert.equal(await worker.stop('SIGINT', 30_000), 0, worker.output());
    } finally {
      await worker.stop('SIGKILL', 5_000);
    }
  });
});
